import { afterEach, expect, it } from 'vitest';
import { CLI } from '../support/gateway-process.js';
import { killCliChildren, runCommand } from '../support/run-cli.js';

// A reader that stops early (audit of issue 17): `openapi | head -1` closes the pipe while
// the CLI still writes the document, more than a pipe holds.

afterEach(() => killCliChildren());

it('ends quietly with 0 when the reader of its output stops early, as in openapi | head -1', async () => {
  // pipefail: the pipeline's status is the CLI's, not head's; its stderr is the command's.
  const result = await runCommand('bash', [
    '-o',
    'pipefail',
    '-c',
    '"$0" "$1" openapi | head -1',
    process.execPath,
    CLI,
  ]);
  expect(result).toEqual({ code: 0, stdout: '{\n', stderr: '' });
});

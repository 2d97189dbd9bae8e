import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/run-cli.js';

const LOGGER = fileURLToPath(new URL('../../dist/observability/create-logger.js', import.meta.url));

/**
 * A process that logs `count` lines to `file` through the gateway's logger, then ends the
 * way `ending` says: an exit called at once, or an event loop left empty.
 */
function script(file: string, count: number, ending: 'exit' | 'empty loop'): string {
  return `
    import { openSync } from 'node:fs';
    const { createLogger } = await import(${JSON.stringify(LOGGER)});
    const logger = createLogger('info', openSync(${JSON.stringify(file)}, 'a'));
    for (let n = 0; n < ${count}; n += 1) logger.info({ n }, 'line');
    ${ending === 'exit' ? 'process.exit(0);' : ''}
  `;
}

describe('the logger destination', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-logger-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(['exit', 'empty loop'] as const)(
    'writes every line, whole and in order, when the process ends by %s',
    async (ending) => {
      // 2,001 lines: many chunks, and a last one smaller than a chunk, still gathered.
      const file = join(dir, `${ending.replace(' ', '-')}.log`);
      const result = await runCommand(process.execPath, [
        '--input-type=module',
        '-e',
        script(file, 2001, ending),
      ]);
      expect(result.code).toBe(0);
      const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
      expect(lines.map((line) => (JSON.parse(line) as { n: number }).n)).toEqual(
        Array.from({ length: 2001 }, (_, n) => n),
      );
    },
  );
});

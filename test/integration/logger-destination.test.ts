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
function script(file: string | undefined, count: number, ending: 'exit' | 'empty loop'): string {
  const fd = file === undefined ? '1' : `openSync(${JSON.stringify(file)}, 'a')`;
  return `
    import { openSync } from 'node:fs';
    const { createLogger } = await import(${JSON.stringify(LOGGER)});
    const logger = createLogger('info', ${fd});
    // Every 100th line long and not ASCII: lines of any size and encoding keep their place.
    for (let n = 0; n < ${count}; n += 1)
      logger.info({ n, text: n % 100 === 0 ? 'é€'.repeat(20000 + n) : 'x' }, 'line');
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

  it('writes every line to a pipe that its reader drains more slowly than they come', async () => {
    // Standard output is a pipe here: about 8 MB against a 64 KiB pipe buffer.
    const result = await runCommand(process.execPath, [
      '--input-type=module',
      '-e',
      script(undefined, 2001, 'exit'),
    ]);
    expect(result.code).toBe(0);
    const parsed = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { n: number; text: string });
    expect(parsed.map((line) => line.n)).toEqual(Array.from({ length: 2001 }, (_, n) => n));
    expect(parsed[2000]?.text).toBe('é€'.repeat(22000));
  });
});

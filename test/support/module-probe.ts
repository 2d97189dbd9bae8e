import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

export interface ModuleProbe {
  /** NODE_OPTIONS for the child process whose module resolutions are watched. */
  readonly env: NodeJS.ProcessEnv;
  /** The URLs resolved so far whose path holds `fragment`. */
  resolved(): string[];
}

/**
 * Watches which modules a child process resolves, through a `module.registerHooks` resolve
 * hook loaded by `--import` (Node >= 22.15): every resolved URL holding `fragment` is
 * appended to a file, static imports and `import()` alike.
 */
export function moduleProbe(fragment: string): ModuleProbe {
  const dir = tempDir('module-probe-');
  const log = join(dir, 'resolved.txt');
  writeFileSync(log, '');
  const hook = join(dir, 'hook.mjs');
  writeFileSync(
    hook,
    `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    if (result.url.includes(${JSON.stringify(fragment)})) appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
    return result;
  },
});
`,
  );
  return {
    env: { NODE_OPTIONS: `--import=${hook}` },
    resolved: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line !== ''),
  };
}

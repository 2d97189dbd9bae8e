// `npm run build`: src/ -> dist/ with tsc, then the Lua scripts beside the code that loads
// them. It says what it does and how long it took (tsc itself is silent for 15-50 s), and
// stamps dist/ when done, so that `--if-stale` (npm start, npm test) and the tests' global
// setup can tell a dist/ older than src/ from a fresh one without building.
//
// Run by Node's type stripping after .ci/check-node.cjs has checked the Node: erasable
// TypeScript only, and no relative imports (Node would not map a `.js` import to this `.ts`).
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Written last by a build that succeeded; its mtime is when dist/ was last made whole. */
export const BUILD_STAMP = 'dist/.build-stamp';

/** What the build reads: a change to any of them makes dist/ stale. */
const INPUTS = ['src', 'tsconfig.json'];

/** The newest file among `paths` (recursively), or undefined when there is none. */
function newestFile(
  root: string,
  paths: readonly string[],
): { file: string; mtimeMs: number } | undefined {
  let newest: { file: string; mtimeMs: number } | undefined;
  const visit = (path: string): void => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) return;
    if (stat.isDirectory()) {
      for (const name of readdirSync(path)) visit(join(path, name));
    } else if (newest === undefined || stat.mtimeMs > newest.mtimeMs) {
      newest = { file: relative(root, path), mtimeMs: stat.mtimeMs };
    }
  };
  for (const path of paths) visit(join(root, path));
  return newest;
}

/**
 * Why dist/ does not hold the build of today's src/ (one sentence naming the newer file), or
 * undefined when it does: a stamp of a finished build newer than every file the build reads.
 */
export function staleDistReason(root: string = ROOT): string | undefined {
  const stamp = statSync(join(root, BUILD_STAMP), { throwIfNoEntry: false });
  if (stamp === undefined)
    return existsSync(join(root, 'dist'))
      ? 'dist/ has no record of a finished build'
      : 'there is no dist/';
  const newest = newestFile(root, INPUTS);
  if (newest !== undefined && newest.mtimeMs > stamp.mtimeMs)
    return `dist/ is older than src/ (${newest.file} changed after the last build)`;
  return undefined;
}

function seconds(sinceMs: number): string {
  return `${((performance.now() - sinceMs) / 1000).toFixed(1)} s`;
}

async function build(): Promise<number> {
  const started = performance.now();
  // Dated from the start: a file saved while tsc runs is newer than the stamp, so stale.
  const startedAt = new Date();
  // A build that fails leaves no stamp: what dist/ holds then is no finished build.
  rmSync(join(ROOT, BUILD_STAMP), { force: true });
  process.stdout.write('build: compiling src/ into dist/ with tsc (15-60 s)…\n');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'src')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    child.once('error', () => resolve(1));
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128)));
  });
  if (code !== 0) {
    process.stderr.write(`build: tsc failed (exit ${code}) after ${seconds(started)}\n`);
    return code;
  }
  cpSync(join(ROOT, 'src/backends/redis/scripts'), join(ROOT, 'dist/backends/redis/scripts'), {
    recursive: true,
  });
  writeFileSync(join(ROOT, BUILD_STAMP), `${startedAt.toISOString()}\n`);
  utimesSync(join(ROOT, BUILD_STAMP), startedAt, startedAt);
  process.stdout.write(`build: dist/ built in ${seconds(started)}\n`);
  return 0;
}

async function main(args: readonly string[]): Promise<number> {
  if (args.includes('--if-stale')) {
    const reason = staleDistReason();
    if (reason === undefined) {
      process.stdout.write('build: dist/ is up to date with src/\n');
      return 0;
    }
    process.stdout.write(`build: ${reason}\n`);
  }
  return build();
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = await main(process.argv.slice(2));

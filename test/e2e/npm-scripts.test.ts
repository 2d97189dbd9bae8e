import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { onJsonLines } from '../support/gateway-process.js';
import { processAlive } from '../support/process-alive.js';
import { killCliChildren, runCommand } from '../support/run-cli.js';
import { tempDir } from '../support/temp-dirs.js';
import { within } from '../support/within.js';
import { accepts } from '../support/port-accepts.js';

// The npm scripts a newcomer runs first (README, Quick start): `npm start` passes signals to
// the gateway, every script checks the Node before building anything, and the build says
// what it does.

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The test runner's environment without GATEWAY_* settings (they would change the config). */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('GATEWAY_') && !name.startsWith('npm_')) env[name] = value;
  return env;
}

/** The ids of every process below `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const children = (id: number): number[] => {
    try {
      return readFileSync(`/proc/${id}/task/${id}/children`, 'utf8')
        .split(' ')
        .filter((s) => s !== '')
        .map(Number);
    } catch {
      return [];
    }
  };
  const found: number[] = [];
  for (let queue = children(pid); queue.length > 0;) {
    const next = queue.shift() as number;
    found.push(next);
    queue.push(...children(next));
  }
  return found;
}

/** The arguments a process was started with (Linux /proc), none once it is gone. */
function argv(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/** Processes a test started outside runCommand, killed after it whatever happened. */
const started: number[] = [];

afterEach(() => {
  killCliChildren();
  for (const pid of started.splice(0)) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
});

describe('npm start', () => {
  it('stops the gateway, drained, when npm gets SIGTERM, and frees both its ports', async () => {
    const npm = spawn(
      'npm',
      ['start', '--', '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0'],
      { cwd: REPO, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    started.push(npm.pid as number);
    const logs: Record<string, unknown>[] = [];
    const listening = new Promise<Record<string, unknown>>((resolve) =>
      onJsonLines(npm.stdout, (entry) => {
        logs.push(entry);
        if (entry.msg === 'gateway listening') resolve(entry);
      }),
    );
    npm.stderr.resume();
    // The gateway holds the write end of npm's stdout too: it closes once every process
    // of `npm start` has exited, the gateway included; npm's exit, once npm has reaped its
    // child (so the gateway's id is no zombie's).
    const gone = Promise.all([
      new Promise((resolve) => npm.stdout.once('close', resolve)),
      new Promise((resolve) => npm.once('exit', resolve)),
    ]);
    const { port, admin_port: adminPort } = (await within(
      60_000,
      'npm start listening',
      listening,
    )) as { port: number; admin_port: number };
    // The Node running dist/cli.js, not a shell whose command line names it.
    const gatewayPid = descendants(npm.pid as number).find((pid) => {
      const [command = '', ...args] = argv(pid);
      return basename(command) === 'node' && args.join(' ').includes('dist/cli.js serve');
    });
    if (gatewayPid === undefined) throw new Error('no gateway process below npm start');
    started.push(gatewayPid);

    npm.kill('SIGTERM');
    await within(30_000, 'every process of npm start gone', gone);
    expect(processAlive(gatewayPid)).toBe(false);
    expect(logs.map((entry) => entry.msg)).toEqual(expect.arrayContaining(['draining', 'stopped']));
    expect(logs.find((entry) => entry.msg === 'draining')).toMatchObject({ signal: 'SIGTERM' });
    expect([await accepts(port), await accepts(adminPort)]).toEqual([false, false]);
  }, 90_000);
});

/** A copy of the repository's package.json whose engines ask for `node`. */
function manifestNeeding(node: string): string {
  const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
    engines: { node: string };
  };
  manifest.engines.node = node;
  return JSON.stringify(manifest, null, 2);
}

/** The files of .ci/ that the npm scripts run. */
const NPM_SCRIPT_FILES = ['check-node.cjs', 'build.ts'];

/** A folder with the repository's package.json (or `manifest`) and the scripts' files, nothing else. */
function bareClone(manifest?: string): string {
  const root = tempDir('npm-scripts-');
  writeFileSync(
    join(root, 'package.json'),
    manifest ?? readFileSync(join(REPO, 'package.json'), 'utf8'),
  );
  mkdirSync(join(root, '.ci'));
  for (const file of NPM_SCRIPT_FILES)
    copyFileSync(join(REPO, '.ci', file), join(root, '.ci', file));
  return root;
}

/** Each script that builds or tests, as typed (each has its own pre-script). */
const SCRIPTS = ['npm start', 'npm test', 'npm run build', 'npm run bench', 'npm run test:unit'];

const npmRun = (line: string, cwd: string) =>
  runCommand('npm', line.split(' ').slice(1), { cwd, env: npmEnv() });

describe('every npm script that builds or tests', () => {
  it.each(SCRIPTS)(
    '%s on a Node older than engines: the one line, exit 1, before any build',
    async (line) => {
      const { code, stdout, stderr } = await npmRun(line, bareClone(manifestNeeding('>=99.0')));
      expect(code).toBe(1);
      expect(stderr).toContain(
        `accounts-gateway needs Node.js >=99.0 (package.json engines); this is Node.js v${process.versions.node}: see the README, Quick start:`,
      );
      expect(`${stdout}${stderr}`).not.toMatch(/tsc|vitest|build: /);
    },
  );

  it.each(['npm start', 'npm test'])(
    '%s before npm ci: says to run npm ci, not "tsc: not found"',
    async (line) => {
      const { code, stdout, stderr } = await npmRun(line, bareClone());
      expect(code).toBe(1);
      expect(stderr).toContain(
        'accounts-gateway: the dependencies are not installed (no node_modules/typescript): run npm ci first.',
      );
      expect(`${stdout}${stderr}`).not.toMatch(/not found|build: /);
    },
  );
});

/** A one-file project with the repository's build script and compiler. */
function buildableClone(source: string): string {
  const root = bareClone();
  symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'));
  copyFileSync(join(REPO, 'tsconfig.json'), join(root, 'tsconfig.json'));
  mkdirSync(join(root, 'src/backends/redis/scripts'), { recursive: true });
  copyFileSync(join(REPO, 'src/tsconfig.json'), join(root, 'src/tsconfig.json'));
  writeFileSync(join(root, 'src/answer.ts'), source);
  writeFileSync(join(root, 'src/backends/redis/scripts/noop.lua'), 'return 0\n');
  return root;
}

const build = (root: string, ...args: string[]) =>
  runCommand(process.execPath, ['.ci/build.ts', ...args], { cwd: root, env: npmEnv() });

/** Each test below runs tsc once, seconds of CPU: bounded for a loaded machine. */
const COMPILER_TIMEOUT_MS = 90_000;

describe('npm run build', () => {
  it(
    'says what it builds and how long it took; with --if-stale, builds nothing when dist/ is fresh',
    async () => {
      const root = buildableClone('export const answer: number = 42;\n');
      const first = await build(root);
      expect(first).toMatchObject({ code: 0, stderr: '' });
      expect(first.stdout).toMatch(
        /^build: compiling src\/ into dist\/ with tsc \(15-60 s\)…\nbuild: dist\/ built in \d+\.\d s\n$/,
      );
      expect(readFileSync(join(root, 'dist/answer.js'), 'utf8')).toContain('answer = 42');
      expect(existsSync(join(root, 'dist/backends/redis/scripts/noop.lua'))).toBe(true);

      expect(await build(root, '--if-stale')).toEqual({
        code: 0,
        stdout: 'build: dist/ is up to date with src/\n',
        stderr: '',
      });
    },
    COMPILER_TIMEOUT_MS,
  );

  it(
    'with --if-stale, names the file that makes dist/ stale and builds; a failed build leaves no record of a finished one',
    async () => {
      const root = buildableClone('export const answer: number = 42;\n');
      mkdirSync(join(root, 'dist'));
      writeFileSync(join(root, 'dist/.build-stamp'), '');
      const earlier = new Date(Date.now() - 60_000);
      utimesSync(join(root, 'dist/.build-stamp'), earlier, earlier);
      writeFileSync(join(root, 'src/answer.ts'), 'export const answer: number = "no";\n');

      const result = await build(root, '--if-stale');
      expect(result.code).not.toBe(0);
      expect(result.stdout).toMatch(
        /^build: dist\/ is older than src\/ \(src\/answer\.ts changed after the last build\)\nbuild: compiling src\/ into dist\/ with tsc/,
      );
      expect(result.stderr).toMatch(/^build: tsc failed \(exit \d+\) after \d+\.\d s\n$/);
      expect(existsSync(join(root, 'dist/.build-stamp'))).toBe(false);
    },
    COMPILER_TIMEOUT_MS,
  );
});

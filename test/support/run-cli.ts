import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CLI } from './gateway-process.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Children of runCli still running; killCliChildren() in teardown so none outlives a failure. */
const commands = new Set<ChildProcess>();

/**
 * Runs the built CLI to completion from the repository root, as an operator would; `stdin`
 * is piped (so it is not a TTY) and then closed. The environment is the test runner's
 * without its GATEWAY_* settings, plus `env`.
 */
export function runCli(
  args: string[],
  options: { stdin?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return runCommand(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: cliEnv(options.env ?? {}),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

/**
 * Runs any command to completion (stdin piped, then closed) and resolves with its exit code
 * and output; killCliChildren() ends it too.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd?: string; stdin?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    commands.add(child);
    let stdout = '';
    let stderr = '';
    // Decoded as a stream, so a character split between two chunks comes out whole.
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // The command may exit (a usage error) before it reads stdin.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
    child.once('error', reject);
    child.once('close', (code) => {
      commands.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A CLI process left running (`keys audit --follow`): its output so far, awaited, and its end. */
export interface RunningCli {
  readonly pid: number;
  /** What it has written to stdout so far. */
  stdout(): string;
  /** Resolves once its stdout holds `count` lines (so many complete lines), or it has ended. */
  untilLines(count: number): Promise<string[]>;
  /** Its exit code (null: ended by a signal) and all it wrote. */
  readonly exited: Promise<CliResult>;
}

/**
 * Starts the built CLI and leaves it running (killCliChildren() ends it in teardown); a test
 * stops it by its PID, as an operator's Ctrl-C or a supervisor's SIGTERM would.
 */
export function startCli(args: string[], options: { env?: NodeJS.ProcessEnv } = {}): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: cliEnv(options.env ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  commands.add(child);
  let stdout = '';
  let stderr = '';
  const waiters: { count: number; resolve: (lines: string[]) => void }[] = [];
  const lines = (): string[] => stdout.split('\n').slice(0, -1);
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const waiter of [...waiters])
      if (lines().length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(lines());
      }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      commands.delete(child);
      // Waiters for lines that never came get what there is: the test's assertion says so.
      for (const waiter of waiters.splice(0)) waiter.resolve(lines());
      resolve({ code, stdout, stderr });
    });
  });
  if (child.pid === undefined) throw new Error('the CLI did not start');
  return {
    pid: child.pid,
    stdout: () => stdout,
    untilLines: (count) =>
      lines().length >= count
        ? Promise.resolve(lines())
        : new Promise((resolve) => waiters.push({ count, resolve })),
    exited,
  };
}

/** The test runner's environment without GATEWAY_* settings, plus the given ones. */
function cliEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('GATEWAY_')) env[name] = value;
  return { ...env, ...extra };
}

export function killCliChildren(): void {
  for (const child of commands) child.kill('SIGKILL');
  commands.clear();
}

/** What the built CLI did on a terminal: its exit code, what it wrote, the terminal after. */
export interface TerminalResult {
  readonly code: number;
  /** stdout and stderr as the terminal showed them (one pty: they interleave). */
  readonly output: string;
  /** The terminal's ECHO and ICANON flags after the command: a raw mode left on clears them. */
  readonly echo: boolean;
  readonly canonical: boolean;
}

/** runCliOnTerminal's runner, in python3. */
const PTY_SCRIPT = `
import json, os, pty, sys, termios
argv, steps = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out, seen = b'', 0
def read():
    global out
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        chunk = b''
    out += chunk
    return chunk != b''
for after, keys in steps:
    while out.find(after.encode(), seen) < 0:
        if not read():
            break
    seen = out.find(after.encode(), seen) + len(after)
    os.write(fd, keys.encode())
while read():
    pass
lflag = termios.tcgetattr(fd)[3]
_, status = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(status), 'output': out.decode(),
  'echo': bool(lflag & termios.ECHO), 'canonical': bool(lflag & termios.ICANON)}))
`;

/**
 * Runs the built CLI on a pseudo-terminal from python3's pty module (node has none) as its
 * stdin, stdout and stderr; for each step, waits for `after` to appear in the output, then
 * types `keys` (raw bytes: "\x03" is Ctrl-C, "\x04" Ctrl-D, "\r" Enter).
 */
export async function runCliOnTerminal(
  args: string[],
  steps: readonly { after: string; keys: string }[],
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<TerminalResult> {
  const steplist = steps.map(({ after, keys }) => [after, keys]);
  const result = await runCommand(
    'python3',
    ['-c', PTY_SCRIPT, JSON.stringify([process.execPath, CLI, ...args]), JSON.stringify(steplist)],
    { cwd: REPO, env: cliEnv(options.env ?? {}) },
  );
  if (result.code !== 0) throw new Error(`the pty runner failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as TerminalResult;
}

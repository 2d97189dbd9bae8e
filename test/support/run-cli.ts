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

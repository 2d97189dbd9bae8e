import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { processAlive } from '../support/process-alive.js';
import { runCommand } from '../support/run-cli.js';
import { accepts } from '../support/port-accepts.js';

// config/forward-auth/try-nginx.sh, run as docs/forward-auth.md says: it prints curl lines,
// they work through a real nginx, and Ctrl-C stops everything it started. Its base port is
// below the kernel's ephemeral range (where port 0 never lands); a base the script finds
// taken is refused by it, and another is tried.

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(REPO, 'config/forward-auth/try-nginx.sh');

interface Running {
  readonly child: ChildProcess;
  readonly base: number;
  /** What it printed once ready. */
  readonly stdout: string;
  readonly exited: Promise<number | null>;
}

let running: Running | undefined;

afterAll(async () => {
  // A failed test's script: SIGTERM runs the same clean-up as Ctrl-C.
  if (running !== undefined && running.child.exitCode === null) {
    running.child.kill('SIGTERM');
    await running.exited;
  }
});

/** Starts the script and resolves once it has printed its curl lines (or rejects with why not). */
function startScript(base: number): Promise<Running> {
  const child = spawn(SCRIPT, [String(base)], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    // The gateway runs on the `node` of PATH: the one running these tests.
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('Ctrl-C stops all three.\n')) resolve({ child, base, stdout, exited });
    });
    void exited.then((code) =>
      reject(new Error(`try-nginx.sh exited ${String(code)} before it was ready:\n${stderr}`)),
    );
  });
}

describe('config/forward-auth/try-nginx.sh', () => {
  it('serves a protected service through nginx and the gateway, and Ctrl-C leaves nothing behind', async () => {
    for (let attempt = 1; running === undefined; attempt += 1) {
      const base = 12_000 + Math.floor(Math.random() * 7_000);
      try {
        running = await startScript(base);
      } catch (error) {
        if (!String(error).includes('already in use') || attempt === 5) throw error;
      }
    }
    const { stdout, base } = running;
    const curls = stdout.split('\n').filter((line) => line.startsWith('  curl '));
    expect(curls).toHaveLength(2);
    const pids = /pids: nginx (\d+), gateway (\d+), service (\d+)/
      .exec(stdout)
      ?.slice(1)
      .map(Number);
    const dir = /^Configs and logs: (.+)$/m.exec(stdout)?.[1] ?? '';
    expect(pids).toHaveLength(3);
    expect(existsSync(dir)).toBe(true);

    // The lines as printed, run by a shell as someone pasting them would.
    const [without, withPair] = await Promise.all(
      curls.map((line) => runCommand('bash', ['-c', line.trim()])),
    );
    expect(without?.stdout).toMatch(/^HTTP\/1\.1 401 /);
    expect(without?.stdout).toMatch(/^www-authenticate: Basic realm="accounts-gateway"/im);
    expect(without?.stdout).toContain('"code":"missing_credentials"');
    expect(withPair?.stdout).toMatch(/^HTTP\/1\.1 200 /);
    expect(withPair?.stdout).toContain(
      '{"service":"protected","path":"/hello","subject":"demo","method":"basic"}',
    );

    running.child.kill('SIGINT');
    expect(await running.exited).toBe(0);
    expect((pids ?? []).filter(processAlive)).toEqual([]);
    const ports = [base, base + 1, base + 2];
    expect(await Promise.all(ports.map(accepts))).toEqual([false, false, false]);
    expect(existsSync(dir)).toBe(false);
  }, 120_000);
});

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnRedisServer } from './redis-server.js';

export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** SIGSTOP: the process keeps its sockets open and answers nothing. */
  pause(): void;
  resume(): void;
  /** Kills the process; its files stay, so start() brings back the same node. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Kills the process and removes its files. */
  stop(): Promise<void>;
}

/**
 * A redis-server of a test file's own, so pausing it never stalls other test files; with
 * `cluster`, a Cluster-enabled node holding no slot yet; with `password`, one that asks for it
 * (`requirepass`; `url` holds it).
 */
export async function startOwnRedis(
  options: { cluster?: boolean; password?: string } = {},
): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gw-redis-'));
  let child: ChildProcess | undefined;
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (options.password !== undefined) args.push('--requirepass', options.password);
  if (options.cluster === true) {
    args.push(
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, 'nodes.conf'),
      '--cluster-announce-ip',
      '127.0.0.1',
    );
  }
  const start = (): Promise<void> => spawnRedisServer(args, (proc) => (child = proc), dir);
  const kill = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url:
      options.password === undefined
        ? `redis://127.0.0.1:${port}`
        : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    kill,
    start,
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

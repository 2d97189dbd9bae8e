import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

export interface TestRedis {
  readonly url: string;
  /** Stops the server (the data goes with it). */
  stop(): Promise<void>;
  /** Starts it again on the same address after stop(). */
  start(): Promise<void>;
}

const HOW_TO_GET_ONE =
  'Tests need a real Redis: start a Docker engine (testcontainers is used when one answers) ' +
  'or install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis).';

/** A Docker engine answers (testcontainers), else a local redis-server on a free port. */
export async function startTestRedis(): Promise<TestRedis> {
  if (dockerLikelyAvailable()) {
    try {
      return await startContainer();
    } catch {
      // No engine after all: fall through to a local server.
    }
  }
  return startLocalRedis();
}

function dockerLikelyAvailable(): boolean {
  return process.env.DOCKER_HOST !== undefined || existsSync('/var/run/docker.sock');
}

async function startContainer(): Promise<TestRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine')
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  return {
    url,
    stop: async () => {
      await container.stop();
    },
    start: () =>
      Promise.reject(new Error('restarting a container on the same port is not supported')),
  };
}

/**
 * Spawns redis-server with the given arguments; `onSpawn` gets the process at once (so the
 * caller can stop it even if it never gets ready), the promise resolves once it accepts
 * connections.
 */
export async function spawnRedisServer(
  args: readonly string[],
  onSpawn: (proc: ChildProcess) => void,
  cwd?: string,
): Promise<void> {
  const proc = spawn('redis-server', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd === undefined ? {} : { cwd }),
  });
  onSpawn(proc);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        proc.stdout?.off('data', onData);
        proc.stdout?.resume();
        resolve();
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.resume();
    proc.once('exit', (code) =>
      reject(new Error(`redis-server exited (${String(code)}): ${output}`)),
    );
    proc.once('error', reject);
  });
}

/** A local redis-server on `port`, not running until start(): a Redis that comes up later. */
export function localRedisOn(port: number): TestRedis {
  let child: ChildProcess | undefined;
  const start = (): Promise<void> =>
    spawnRedisServer(
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      (proc) => (child = proc),
    );
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  };
  return { url: `redis://127.0.0.1:${port}`, stop, start };
}

/** A local redis-server on a free port; tests that stop and restart Redis need this kind. */
export async function startLocalRedis(): Promise<TestRedis> {
  if (!(await commandExists('redis-server'))) throw new Error(HOW_TO_GET_ONE);
  const redis = localRedisOn(await freePort());
  await redis.start();
  return redis;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function commandExists(command: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = spawn(command, ['--version'], { stdio: 'ignore' });
    probe.once('error', () => resolve(false));
    probe.once('exit', (code) => resolve(code === 0));
  });
}

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './redis-server.js';
import { untilState } from './until-state.js';

export type RedisCommand = 'redis-server' | 'redis-sentinel';

/** The line each prints once it accepts connections (a sentinel: once it monitors its master). */
const READY_LINE: Record<RedisCommand, string> = {
  'redis-server': 'Ready to accept connections',
  'redis-sentinel': '+monitor master',
};

const HOW_TO_GET_THEM =
  'The Cluster and Sentinel tests run redis-server, redis-sentinel and redis-cli on loopback ' +
  '(Debian/Ubuntu: apt-get install redis-server redis-sentinel redis-tools; macOS: brew install redis).';

/** What a process printed last, for the error that says why it did not start. */
const OUTPUT_KEPT_CHARS = 16_384;

/** Each bind that can lose a race for its port is tried again on others, this many times. */
const PORT_ATTEMPTS = 5;

/** A redis-server or redis-sentinel process of a test's own, on loopback. */
export interface RedisProcess {
  /** Its client port. */
  readonly port: number;
  /** `127.0.0.1:port`, as `credentials.redis.nodes` lists it. */
  readonly address: string;
  /** Its directory: the config file, and what it writes (nodes.conf, a sentinel's rewrites). */
  readonly dir: string;
  /** The running process's id; undefined once killed. */
  readonly pid: number | undefined;
  /**
   * One command on a connection kept for the test; rejects at once while the process is
   * down (no offline queue, no retry), so a poll reads a dead node as dead.
   */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** SIGKILL by PID; resolves once the process has exited. Its directory stays. */
  kill(): Promise<void>;
  /**
   * Starts it again after kill(): the same ports, directory and config file, with
   * `extraArgs` (config directives as redis-server's command line takes them) for this run.
   */
  restart(extraArgs?: readonly string[]): Promise<void>;
}

/**
 * A topology on TLS only: the certificate and key every process presents (to clients and to
 * its peers), and the CA they and the test's own connections trust.
 */
export interface RedisTlsFiles {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface RedisProcessOptions {
  readonly command: RedisCommand;
  /** Its client port speaks TLS only: the test's own connection (call) then does too. */
  readonly tls?: RedisTlsFiles | undefined;
  /** The password its clients give (`requirepass`): the test's own connection gives it too. */
  readonly password?: string | undefined;
  /** Made afresh (emptied if it exists); the caller removes it (with the topology's root). */
  readonly dir: string;
  /** Free ports it needs, its client port first (a Cluster node also needs its bus port). */
  readonly portCount?: number;
  /** The config file for these ports. */
  readonly config: (ports: readonly number[]) => string;
}

/** Processes of this test file still running: SIGKILLed if the file's process exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

class PortTaken extends Error {}

/**
 * Starts a process on free loopback ports and resolves once it accepts connections. A port
 * found free can be taken by another test file before the process binds it: then it starts
 * again on other ports.
 */
export async function startRedisProcess(options: RedisProcessOptions): Promise<RedisProcess> {
  const configFile = join(options.dir, `${options.command}.conf`);
  for (let attempt = 1; ; attempt += 1) {
    // Afresh each time: a Cluster node that lost its bus port has already written nodes.conf.
    rmSync(options.dir, { recursive: true, force: true });
    mkdirSync(options.dir, { recursive: true });
    const ports = await distinctFreePorts(options.portCount ?? 1);
    writeFileSync(configFile, options.config(ports));
    const proc = redisProcess(options, configFile, ports);
    try {
      await proc.restart();
      return proc;
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

function redisProcess(
  { command, dir, tls, password }: RedisProcessOptions,
  configFile: string,
  ports: readonly number[],
): RedisProcess {
  const port = ports[0] ?? 0;
  const clientTls = tls === undefined ? {} : { tls: { ca: readFileSync(tls.caFile) } };
  let child: ChildProcess | undefined;
  let output = '';
  let client: Promise<Redis> | undefined;

  const connect = (): Promise<Redis> => {
    const redis = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      enableOfflineQueue: false,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...clientTls,
      ...(password === undefined ? {} : { password }),
    });
    redis.on('error', () => undefined);
    const connecting = redis.connect().then(() => redis);
    // Closed (the process died): the next call connects afresh.
    redis.once('end', () => {
      if (client === connecting) client = undefined;
    });
    return connecting;
  };
  const dropClient = (): void => {
    const closing = client;
    client = undefined;
    closing?.then((redis) => redis.disconnect()).catch(() => undefined);
  };

  const launch = (extraArgs: readonly string[]): Promise<void> => {
    output = '';
    const proc = spawn(command, [configFile, ...extraArgs], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    running.add(proc);
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-OUTPUT_KEPT_CHARS);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.once('exit', () => {
      running.delete(proc);
      if (child === proc) child = undefined;
      dropClient();
    });
    return new Promise<void>((resolve, reject) => {
      const onData = (): void => {
        if (!output.includes(READY_LINE[command])) return;
        proc.stdout?.off('data', onData);
        proc.off('exit', onExit);
        resolve();
      };
      const onExit = (code: number | null): void => {
        const text = `${command} on ${port} exited (${String(code)}) before it was ready:\n${output}`;
        reject(output.includes('Address already in use') ? new PortTaken(text) : new Error(text));
      };
      proc.stdout?.on('data', onData);
      proc.once('exit', onExit);
      proc.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT' ? new Error(`${command} not found. ${HOW_TO_GET_THEM}`) : error,
        ),
      );
    });
  };

  return {
    port,
    address: `127.0.0.1:${port}`,
    dir,
    get pid() {
      return child?.pid;
    },
    async call(name, ...args) {
      if (child === undefined) throw new Error(`${command} on ${port} is not running`);
      client ??= connect();
      const redis = await client.catch((error: unknown) => {
        client = undefined;
        throw error;
      });
      return redis.call(name, ...args);
    },
    async kill() {
      const proc = child;
      if (proc?.pid === undefined) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      process.kill(proc.pid, 'SIGKILL');
      await exited;
    },
    restart: (extraArgs = []) => {
      if (child !== undefined) throw new Error(`${command} on ${port} is running`);
      return launch(extraArgs);
    },
  };
}

/** Runs redis-cli to completion; rejects with its output unless it exits 0. */
export function redisCli(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const cli = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    cli.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    cli.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    cli.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT' ? new Error(`redis-cli not found. ${HOW_TO_GET_THEM}`) : error,
      ),
    );
    cli.once('close', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`redis-cli ${args.join(' ')} exited ${String(code)}:\n${output}`)),
    );
  });
}

/** The `field:value` lines of an INFO-style reply (CLUSTER INFO, INFO replication). */
export function infoFields(reply: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of String(reply).split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/** A flat [name, value, name, value, …] reply (SENTINEL MASTER, SENTINEL REPLICAS) as a record. */
export function pairsToRecord(reply: unknown): Record<string, string> {
  const list = Array.isArray(reply) ? (reply as unknown[]) : [];
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) record[String(list[i])] = String(list[i + 1]);
  return record;
}

/**
 * Resolves once every one of `replicas` has processed all that `master` had written when
 * called (ROLE offsets): what a test wrote before it kills the master survives the failover,
 * as it would after a quiet moment; a write racing the kill may be lost, as in production.
 */
export async function untilReplicated(
  master: RedisProcess,
  replicas: readonly RedisProcess[],
): Promise<void> {
  const [, offset] = (await master.call('ROLE')) as [string, number];
  await untilState(
    `the replicas of ${master.address} at replication offset ${offset}`,
    () => Promise.all(replicas.map((replica) => replica.call('ROLE'))),
    (roles) => (roles.every((role) => Number((role as unknown[])[4]) >= offset) ? true : undefined),
  );
}

/**
 * Starts every process at once; if one fails, the others are killed (once started) and the
 * first failure is thrown, so nothing outlives a failed start.
 */
export async function startRedisProcesses(
  list: readonly RedisProcessOptions[],
): Promise<RedisProcess[]> {
  const results = await Promise.allSettled(list.map((options) => startRedisProcess(options)));
  const started = results.flatMap((result) =>
    result.status === 'fulfilled' ? [result.value] : [],
  );
  const failed = results.find((result) => result.status === 'rejected');
  if (failed === undefined) return started;
  await Promise.all(started.map((proc) => proc.kill()));
  throw failed.reason;
}

/**
 * A redis-server's config lines for a test: loopback only, nothing saved, and replicas
 * synced at once (Redis 7 waits 5 s by default to batch diskless syncs: every test with a
 * replica would wait it).
 */
export function serverConfig(
  port: number,
  dir: string,
  tls?: RedisTlsFiles,
  password?: string,
): string[] {
  return [
    ...listenConfig(port, tls),
    'bind 127.0.0.1',
    'save ""',
    'appendonly no',
    'repl-diskless-sync-delay 0',
    `dir "${dir}"`,
    // Asked of clients, and given by a replica to its master.
    ...(password === undefined ? [] : [`requirepass "${password}"`, `masterauth "${password}"`]),
  ];
}

/**
 * Where a redis-server or redis-sentinel listens: `port`, or with `tls` that port for TLS
 * only (the plain port off), no client certificate asked for, and TLS to its peers too
 * (a replica to its master, a sentinel to the servers and the other sentinels).
 */
export function listenConfig(port: number, tls?: RedisTlsFiles): string[] {
  if (tls === undefined) return [`port ${port}`];
  return [
    'port 0',
    `tls-port ${port}`,
    `tls-cert-file "${tls.certFile}"`,
    `tls-key-file "${tls.keyFile}"`,
    `tls-ca-cert-file "${tls.caFile}"`,
    'tls-auth-clients no',
    'tls-replication yes',
  ];
}

/** redis-cli's arguments to reach a process of `tls`'s topology (none for a plain one). */
export function redisCliTls(tls?: RedisTlsFiles): string[] {
  return tls === undefined ? [] : ['--tls', '--cacert', tls.caFile];
}

/** redis-cli's arguments to give `password` (none without one). */
export function redisCliAuth(password?: string): string[] {
  return password === undefined ? [] : ['-a', password, '--no-auth-warning'];
}

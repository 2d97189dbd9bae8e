// What the bench measures and what it needs: the upstream, the bare engines, gateways,
// Caddy, nginx, Redis servers and their seeding. Every process goes through the group, all
// listen on 127.0.0.1 only, and each is ready once it answers HTTP (Redis: once it says so).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Cluster } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { parseKeyId } from '../../src/identity/key-id.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { freePort, spawnRedisServer } from '../support/redis-server.js';
import { httpRequest, waitForHttp, type ProcessGroup, type Started } from './processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVERS = fileURLToPath(new URL('./servers/', import.meta.url));
export const CLI = join(ROOT, 'dist/cli.js');

/**
 * The Node flags the gateway runs with in production: those of `npm start` (the Dockerfile's
 * ENTRYPOINT and the CLI's shebang carry the same), so the bench measures what ships.
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = (() => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  return words.slice(1, words.indexOf('dist/cli.js')).filter((word) => word.startsWith('--'));
})();

/** A proxy to load: the URL wrk requests and the process whose tree is measured. */
export interface Target {
  readonly name: string;
  /** http://127.0.0.1:PORT/accounts */
  readonly url: string;
  readonly port: number;
  readonly started: Started;
}

async function nodeServer(
  group: ProcessGroup,
  name: string,
  script: string,
  args: readonly string[],
): Promise<Target> {
  const port = await freePort();
  const started = group.start(name, process.execPath, [
    join(SERVERS, script),
    String(port),
    ...args,
  ]);
  const url = `http://127.0.0.1:${port}/accounts`;
  await waitForHttp(group, started, url);
  return { name, url, port, started };
}

export function startUpstream(group: ProcessGroup): Promise<Target> {
  return nodeServer(group, 'upstream', 'upstream.ts', []);
}

export function startBare(
  group: ProcessGroup,
  engine: 'http-proxy-3' | 'undici',
  upstream: Target,
): Promise<Target> {
  const origin = `http://127.0.0.1:${upstream.port}`;
  return engine === 'undici'
    ? nodeServer(group, 'bare-undici', 'bare-undici.ts', [origin])
    : nodeServer(group, 'bare-http-proxy-3', 'bare-http-proxy.ts', [origin]);
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly started: Started;
}

/**
 * A redis-server of the bench's own on loopback, saving nothing, via the tests' helper;
 * `replicaOf`: a replica of that server.
 */
export async function startRedis(
  group: ProcessGroup,
  name: string,
  replicaOf?: RedisServer,
): Promise<RedisServer> {
  const port = await freePort();
  let started: Started | undefined;
  await spawnRedisServer(
    [
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      ...(replicaOf === undefined ? [] : ['--replicaof', '127.0.0.1', String(replicaOf.port)]),
    ],
    (proc) => (started = group.adopt(name, proc)),
    group.dir,
  );
  if (started === undefined) throw new Error(`${name}: not started`);
  return { port, url: `redis://127.0.0.1:${port}`, started };
}

/** One Redis command in the protocol's wire form (what redis-cli --pipe reads). */
function resp(args: readonly string[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return out;
}

/** Streams the commands into `redis-cli --pipe` (fast enough for a million pairs). */
export async function redisPipe(
  group: ProcessGroup,
  redis: RedisServer,
  commands: Iterable<readonly string[]>,
): Promise<number> {
  const cli = group.start(
    'redis-cli-pipe',
    'redis-cli',
    ['-h', '127.0.0.1', '-p', String(redis.port), '--pipe'],
    { output: 'pipe', stdin: 'pipe' },
  );
  let out = '';
  cli.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  cli.child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const stdin = cli.child.stdin;
  if (stdin === null) throw new Error('redis-cli: no stdin');
  // Stopped meanwhile (a signal): the exit check below reports it, not an EPIPE crash.
  stdin.on('error', () => undefined);
  let batch = '';
  for (const command of commands) {
    batch += resp(command);
    if (batch.length > 1 << 20) {
      if (!stdin.write(batch)) {
        await Promise.race([new Promise((resolve) => stdin.once('drain', resolve)), cli.exited]);
      }
      if (cli.child.exitCode !== null || cli.child.signalCode !== null) break;
      batch = '';
    }
  }
  stdin.end(batch);
  await cli.exited;
  const summary = /errors: (\d+), replies: (\d+)/.exec(out);
  if (summary === null || summary[1] !== '0') throw new Error(`redis-cli --pipe failed: ${out}`);
  return Number(summary[2]);
}

/** Commands sent at once by clusterWrite. */
const CLUSTER_WRITE_BATCH = 500;

/**
 * The same commands on a Redis Cluster (redis-cli --pipe knows no redirection): through an
 * ioredis Cluster client, which sends each to its slot's master.
 */
export async function clusterWrite(
  seeds: readonly string[],
  commands: Iterable<readonly string[]>,
): Promise<void> {
  const cluster = new Cluster(
    seeds.map((seed) => {
      const [host = '', port = ''] = seed.split(':');
      return { host, port: Number(port) };
    }),
  );
  try {
    let batch: Promise<unknown>[] = [];
    for (const [name = '', ...args] of commands) {
      batch.push(cluster.call(name, ...args));
      if (batch.length >= CLUSTER_WRITE_BATCH) {
        await Promise.all(batch);
        batch = [];
      }
    }
    await Promise.all(batch);
  } finally {
    cluster.disconnect();
  }
}

/** Writes pairs the way docs/redis-layout.md tells another service to (HSET + ZADD + SADD). */
export function* pairCommands(options: {
  prefix: string;
  keyOf: (index: number) => string;
  from: number;
  count: number;
  /** One hash for every pair, or pair i's. */
  secretHash: string | ((index: number) => string);
  /** The subject of pair i; by default bench-<i/10>, 10 pairs each (the default per-subject cap). */
  subjectOf?: (index: number) => string;
}): Generator<string[]> {
  const k = redisLayout(options.prefix);
  const created = new Date();
  const createdAt = created.toISOString();
  const subjectOf = options.subjectOf ?? ((i: number) => `bench-${Math.floor(i / 10)}`);
  const { secretHash } = options;
  const hashOf = typeof secretHash === 'string' ? () => secretHash : secretHash;
  for (let i = options.from; i < options.from + options.count; i += 1) {
    const key = options.keyOf(i);
    const subject = subjectOf(i);
    // An id without a tag is found through its key-tag entry (docs/redis-layout.md).
    if (parseKeyId(key).kind !== 'tagged') yield ['SET', k.keyTag(key), k.tagOf(subject)];
    yield [
      'HSET',
      k.key(key, subject),
      'secret_hash',
      hashOf(i),
      'subject',
      subject,
      'label',
      '',
      'status',
      'active',
      'created_at',
      createdAt,
    ];
    yield ['ZADD', k.subjectPairs(subject), String(created.getTime()), key];
    yield ['SADD', k.subjectActive(subject), key];
  }
}

export function userCommand(
  prefix: string,
  user: { username: string; subject: string; passwordHash: string },
): string[] {
  return [
    'HSET',
    redisLayout(prefix).user(user.username),
    'password_hash',
    user.passwordHash,
    'subject',
    user.subject,
    'created_at',
    new Date().toISOString(),
  ];
}

/** `INFO <sections>` of a Redis server, as redis-cli prints it. */
export async function redisInfo(
  group: ProcessGroup,
  redis: RedisServer,
  ...sections: readonly string[]
): Promise<string> {
  const cli = group.start(
    'redis-cli-info',
    'redis-cli',
    ['-h', '127.0.0.1', '-p', String(redis.port), 'info', ...sections],
    { output: 'pipe' },
  );
  let out = '';
  cli.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await cli.exited;
  return out;
}

/** Redis's used_memory, MiB. */
export async function redisMemoryMiB(group: ProcessGroup, redis: RedisServer): Promise<number> {
  const out = await redisInfo(group, redis, 'memory');
  return Number(/used_memory:(\d+)/.exec(out)?.[1] ?? NaN) / 2 ** 20;
}

/**
 * A gateway from the built CLI, with this configuration written as YAML (JSON is YAML).
 * `extraArgs` go to `serve` (e.g. `--workers 2`).
 */
export async function startGateway(
  group: ProcessGroup,
  name: string,
  config: GatewayConfigInput,
  extraArgs: readonly string[] = [],
): Promise<Target> {
  const port = await freePort();
  const file = join(group.dir, `${name}.yaml`);
  const full: GatewayConfigInput = {
    ...config,
    server: { ...config.server, host: '127.0.0.1', port },
    // Off unless the section reads /metrics (the flood section counts bcrypt compares).
    admin: config.admin ?? { enabled: false },
  };
  writeFileSync(file, JSON.stringify(full, null, 2));
  const started = group.start(name, process.execPath, [
    ...GATEWAY_NODE_FLAGS,
    CLI,
    'serve',
    '--config',
    file,
    ...extraArgs,
  ]);
  const url = `http://127.0.0.1:${port}/accounts`;
  await waitForHttp(group, started, url);
  return { name, url, port, started };
}

/** A token from the gateway's own password exchange (POST /auth/token). */
export async function issueToken(
  gateway: Target,
  username: string,
  password: string,
): Promise<string> {
  const answer = await httpRequest(`http://127.0.0.1:${gateway.port}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  const token = (JSON.parse(answer.body) as { data?: { access_token?: string }[] }).data?.[0]
    ?.access_token;
  if (answer.status !== 200 || token === undefined)
    throw new Error(`${gateway.name}: POST /auth/token answered ${answer.status}: ${answer.body}`);
  return token;
}

/**
 * Caddy's basicauth (its Caddyfile form turns on hash_cache: verified pairs are cached) in
 * front of reverse_proxy, for these accounts (one per pair). `gomaxprocs` undefined: all cores.
 */
export async function startCaddy(
  group: ProcessGroup,
  command: string,
  name: string,
  upstream: Target,
  accounts: readonly { key: string; secretHash: string }[],
  gomaxprocs: number | undefined,
): Promise<Target> {
  const port = await freePort();
  const home = join(group.dir, name);
  mkdirSync(home, { recursive: true });
  // Caddy 2.6 reads a base64-encoded bcrypt hash in the Caddyfile.
  const line = (pair: { key: string; secretHash: string }): string =>
    `    ${pair.key} ${Buffer.from(pair.secretHash.replace(/^\$2b\$/, '$2a$')).toString('base64')}\n`;
  const caddyfile = join(home, 'Caddyfile');
  writeFileSync(
    caddyfile,
    `{
  admin off
  auto_https off
}
http://127.0.0.1:${port} {
  bind 127.0.0.1
  basicauth {
${accounts.map(line).join('')}  }
  reverse_proxy 127.0.0.1:${upstream.port}
}
`,
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
  };
  if (gomaxprocs === undefined) delete env.GOMAXPROCS;
  else env.GOMAXPROCS = String(gomaxprocs);
  const started = group.start(
    name,
    command,
    ['run', '--config', caddyfile, '--adapter', 'caddyfile'],
    { env },
  );
  const url = `http://127.0.0.1:${port}/accounts`;
  await waitForHttp(group, started, url);
  return { name, url, port, started };
}

/** nginx proxy_pass with upstream keep-alive, one worker, no auth, no access log: the ceiling. */
export async function startNginx(
  group: ProcessGroup,
  command: string,
  upstream: Target,
): Promise<Target> {
  const port = await freePort();
  const prefix = join(group.dir, 'nginx');
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  const temp = (kind: string): string => `${kind}_temp_path ${join(prefix, 'tmp', kind)};`;
  writeFileSync(
    conf,
    `daemon off;
master_process on;
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  upstream accounts {
    server 127.0.0.1:${upstream.port};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://accounts;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const started = group.start('nginx', command, [
    '-p',
    `${prefix}/`,
    '-c',
    conf,
    '-e',
    join(prefix, 'error.log'),
  ]);
  const url = `http://127.0.0.1:${port}/accounts`;
  await waitForHttp(group, started, url);
  return { name: 'nginx', url, port, started };
}

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeConfig } from '../support/gateway-process.js';
import { processAlive } from '../support/process-alive.js';
import { killCliChildren, runCli, runCommand, type CliResult } from '../support/run-cli.js';
import { accepts } from '../support/port-accepts.js';

// Issue 14, point 7: config/local-redis-cluster.sh and config/local-redis-sentinel.sh start
// a topology for people to try the gateway on, print the YAML a gateway uses, and stop it by
// the PIDs they recorded. Each run here gets a data directory of its own and a base port
// below the kernel's ephemeral range (32768 and up on Linux), where the free ports the
// other test files take (port 0) never land; a base whose ports are taken anyway is refused
// by the script, and another is tried.

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = {
  cluster: join(REPO, 'config/local-redis-cluster.sh'),
  sentinel: join(REPO, 'config/local-redis-sentinel.sh'),
} as const;
/** The cluster's bus ports are 10000 above its ports: both stay below 32768 from these bases. */
const BASES = { cluster: [20_000, 22_700], sentinel: [23_000, 32_000] } as const;

type Topology = keyof typeof SCRIPT;

interface Started {
  readonly base: number;
  readonly dir: string;
  readonly yaml: string;
  readonly config: { credentials: { redis: { nodes: string[]; sentinelName?: string } } };
}

const dirs: string[] = [];
const stoppers: (() => Promise<unknown>)[] = [];

afterEach(() => killCliChildren());

afterAll(async () => {
  // Whatever a failed test left running.
  for (const stop of stoppers) await stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function script(topology: Topology, args: string[], dir: string): Promise<CliResult> {
  return runCommand(SCRIPT[topology], args, {
    cwd: REPO,
    env: { ...process.env, LOCAL_REDIS_DIR: dir },
  });
}

/** A data directory path of the test's own (the script makes it, and refuses an existing one). */
function dataDir(): string {
  const parent = mkdtempSync(join(tmpdir(), 'gw-local-redis-'));
  dirs.push(parent);
  return join(parent, 'data');
}

/** Starts the topology on a random base port, on another if the script finds one taken. */
async function start(topology: Topology): Promise<Started> {
  const [low, high] = BASES[topology];
  for (let attempt = 1; ; attempt += 1) {
    const base = low + Math.floor(Math.random() * (high - low));
    const dir = dataDir();
    const started = await script(topology, ['start', String(base)], dir);
    if (started.code === 0) {
      stoppers.push(() => script(topology, ['stop', String(base)], dir));
      return {
        base,
        dir,
        yaml: started.stdout,
        config: parse(started.stdout) as Started['config'],
      };
    }
    if (!started.stderr.includes('already in use') || attempt === 5)
      throw new Error(`${topology} start exited ${String(started.code)}: ${started.stderr}`);
  }
}

/** The PIDs the script recorded, one file per process. */
function recordedPids(dir: string): number[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => Number(readFileSync(join(dir, entry.name, 'redis.pid'), 'utf8')));
}

/** Stops what `start` started; resolves with what is left of it: processes, listeners, files. */
async function stopAndLook(topology: Topology, started: Started, ports: readonly number[]) {
  const pids = recordedPids(started.dir);
  const stopped = await script(topology, ['stop', String(started.base)], started.dir);
  return {
    code: stopped.code,
    running: pids.filter(processAlive),
    listening: (
      await Promise.all(ports.map(async (port) => ((await accepts(port)) ? port : 0)))
    ).filter(Boolean),
    dirLeft: existsSync(started.dir),
  };
}

/** `keys create` with the YAML the script printed as its config: the CLI reaches the topology. */
async function keyCreatedWith(yaml: string): Promise<string> {
  const args = ['keys', 'create', '--subject', 'demo', '--config', writeConfig(yaml), '--json'];
  const made = await runCli(args);
  if (made.code !== 0) throw new Error(`keys create exited ${String(made.code)}: ${made.stderr}`);
  return (JSON.parse(made.stdout) as { key: string }).key;
}

/** Listens on 127.0.0.1:`port`; undefined when something else holds it. */
function holdPort(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** What stopAndLook finds after a clean stop. */
const NOTHING_LEFT = { code: 0, running: [], listening: [], dirLeft: false };

const range = (from: number, count: number): number[] =>
  Array.from({ length: count }, (_, i) => from + i);

describe('config/local-redis-cluster.sh', () => {
  it('starts a Cluster a gateway uses through the YAML it prints, and stop leaves nothing behind', async () => {
    const started = await start('cluster');
    const ports = range(started.base, 6);
    expect(started.config).toEqual({
      credentials: {
        store: 'redis',
        redis: { mode: 'cluster', nodes: ports.map((port) => `127.0.0.1:${port}`) },
      },
    });

    const status = await script('cluster', ['status', String(started.base)], started.dir);
    expect(status.code).toBe(0);
    expect(status.stdout.match(/ master cluster_state:ok$/gm)).toHaveLength(3);
    expect(status.stdout.match(/ replica cluster_state:ok$/gm)).toHaveLength(3);
    expect(status.stdout).not.toContain('slave');

    const client = new Cluster(started.config.credentials.redis.nodes);
    try {
      // Keys in three slots served by three masters: the Cluster answers as one.
      for (const key of ['a', 'b', 'c']) await client.set(key, key);
      expect(await Promise.all(['a', 'b', 'c'].map((key) => client.get(key)))).toEqual([
        'a',
        'b',
        'c',
      ]);
    } finally {
      client.disconnect();
    }
    expect(await keyCreatedWith(started.yaml)).toMatch(/^ak_/);

    const busPorts = ports.map((port) => port + 10_000);
    expect(await stopAndLook('cluster', started, [...ports, ...busPorts])).toEqual(NOTHING_LEFT);
  }, 60_000);

  it('refuses to start on a taken port, naming it, and starts nothing', async () => {
    const [low, high] = BASES.cluster;
    let holder: { base: number; server: Server } | undefined;
    while (holder === undefined) {
      const base = low + Math.floor(Math.random() * (high - low));
      holder = await holdPort(base + 2).then((server) => server && { base, server });
    }
    try {
      const dir = dataDir();
      const refused = await script('cluster', ['start', String(holder.base)], dir);
      expect(refused).toMatchObject({ code: 1, stdout: '' });
      expect(refused.stderr).toContain(` ${holder.base + 2} `);
      expect(existsSync(dir)).toBe(false);
    } finally {
      const { server } = holder;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('config/local-redis-sentinel.sh', () => {
  it('starts a Sentinel set a gateway uses through the YAML it prints, and stop leaves nothing behind', async () => {
    const started = await start('sentinel');
    const ports = range(started.base, 5);
    expect(started.config).toEqual({
      credentials: {
        store: 'redis',
        redis: {
          mode: 'sentinel',
          sentinelName: 'mymaster',
          nodes: ports.slice(2).map((port) => `127.0.0.1:${port}`),
        },
      },
    });

    const status = await script('sentinel', ['status', String(started.base)], started.dir);
    expect(status.code).toBe(0);
    expect(status.stdout.match(/ sentinel; master 127\.0\.0\.1:\d+$/gm)).toHaveLength(3);
    expect(status.stdout.match(/ pid \d+ master$/gm)).toHaveLength(1);
    expect(status.stdout.match(/ pid \d+ replica$/gm)).toHaveLength(1);
    expect(status.stdout).not.toContain('slave');

    const client = new Redis({
      sentinels: started.config.credentials.redis.nodes.map((node) => ({
        host: '127.0.0.1',
        port: Number(node.split(':')[1]),
      })),
      name: 'mymaster',
    });
    try {
      await client.set('a', 'a');
      expect(await client.get('a')).toBe('a');
    } finally {
      client.disconnect();
    }
    expect(await keyCreatedWith(started.yaml)).toMatch(/^ak_/);

    expect(await stopAndLook('sentinel', started, ports)).toEqual(NOTHING_LEFT);
  }, 60_000);
});

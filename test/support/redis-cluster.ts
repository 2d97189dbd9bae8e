import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  infoFields,
  redisCli,
  redisCliAuth,
  redisCliTls,
  serverConfig,
  startRedisProcesses,
  untilReplicated,
  type RedisProcess,
  type RedisTlsFiles,
} from './redis-process.js';
import { untilState } from './until-state.js';

/**
 * cluster-node-timeout. Redis's default (15 s) makes a failover take about 17 s; at 2 s one
 * takes about 4 s here (the node timeout, the FAIL vote, a 0.5-1 s election delay). Not
 * 1 s: on two shared cores a node starved of CPU for a second would be failed over when no
 * test asked for it.
 */
export const CLUSTER_NODE_TIMEOUT_MS = 2_000;

const MASTERS = 3;

/** A Redis Cluster of 3 masters and 3 replicas on loopback, made by `redis-cli --cluster create`. */
export interface RedisCluster {
  readonly nodes: readonly RedisProcess[];
  /** Every node's `127.0.0.1:port`, as `credentials.redis.nodes` takes seed nodes. */
  readonly seeds: readonly string[];
  /** The hash slot of `key` (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** The master of `key`'s slot, as every running node names it. */
  masterOf(key: string): Promise<RedisProcess>;
  /** The nodes `master`'s ROLE lists as its connected replicas. */
  replicasOf(master: RedisProcess): Promise<RedisProcess[]>;
  /** Waits until `master`'s replicas hold what it has written so far, then SIGKILLs it by PID. */
  killMaster(master: RedisProcess): Promise<void>;
  /**
   * Resolves with the new master of `key`'s slot once every running node says
   * `cluster_state:ok` and names that node, other than `former`, whose ROLE is master.
   */
  awaitPromotion(key: string, former: RedisProcess): Promise<RedisProcess>;
  /** Starts a killed node again; resolves once the Cluster is whole with it (as a replica). */
  restart(node: RedisProcess): Promise<void>;
  /** Kills every node by its PID and removes their directories. */
  stop(): Promise<void>;
}

/** What one node says of itself and the Cluster; `role: 'down'` for a node not running. */
interface NodeView {
  readonly port: number;
  readonly state: string;
  readonly role: string;
  /** A replica's master and link state (ROLE). */
  readonly masterPort?: number;
  readonly link?: string;
  /** A master's connected replicas (ROLE). */
  readonly replicaPorts: readonly number[];
  /** The slot map it holds: `start-end@port` ranges, in slot order. */
  readonly slots: readonly string[];
}

export interface RedisClusterOptions {
  /** Where its directory goes (by default the temp directory). */
  readonly parentDir?: string;
  /** Every node on TLS only: clients, the Cluster bus and replication. */
  readonly tls?: RedisTlsFiles;
  /** The password every node asks of its clients and gives its master. */
  readonly password?: string;
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const { parentDir = tmpdir(), tls, password } = options;
  const root = mkdtempSync(join(parentDir, 'gw-redis-cluster-'));
  let nodes: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.kill()));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    nodes = await startRedisProcesses(
      Array.from({ length: MASTERS * 2 }, (_, i) => ({
        command: 'redis-server' as const,
        dir: join(root, `node-${i}`),
        tls,
        password,
        // The client port and the bus port: the bus is set apart from port + 10000, which
        // another test file's free port may be.
        portCount: 2,
        config: ([port = 0, busPort = 0]: readonly number[]) =>
          [
            ...serverConfig(port, join(root, `node-${i}`), tls, password),
            // The bus over TLS; each node then announces its TLS port in CLUSTER SLOTS.
            ...(tls === undefined ? [] : ['tls-cluster yes']),
            'cluster-enabled yes',
            'cluster-config-file nodes.conf',
            `cluster-port ${busPort}`,
            `cluster-node-timeout ${CLUSTER_NODE_TIMEOUT_MS}`,
          ].join('\n'),
      })),
    );
    await redisCli([
      ...redisCliTls(tls),
      ...redisCliAuth(password),
      '--cluster',
      'create',
      ...nodes.map((node) => node.address),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await untilSettled(nodes);
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = (port: number | undefined): RedisProcess => {
    const node = nodes.find((candidate) => candidate.port === port);
    if (node === undefined) throw new Error(`no node of this Cluster on port ${String(port)}`);
    return node;
  };
  const anyRunning = (): RedisProcess => {
    const node = nodes.find((candidate) => candidate.pid !== undefined);
    if (node === undefined) throw new Error('no node of this Cluster is running');
    return node;
  };
  const slotOf = async (key: string): Promise<number> =>
    Number(await anyRunning().call('CLUSTER', 'KEYSLOT', key));
  const replicasOf = async (master: RedisProcess): Promise<RedisProcess[]> => {
    const view = await readNode(master);
    return view.replicaPorts.map(byPort);
  };

  return {
    nodes,
    seeds: nodes.map((node) => node.address),
    slotOf,
    async masterOf(key) {
      const slot = await slotOf(key);
      const port = await untilState(
        `the running nodes to agree on the master of slot ${slot}`,
        () => readNodes(nodes),
        (views) => (agreedMap(views) === undefined ? undefined : masterPortOf(views, slot)),
      );
      return byPort(port);
    },
    replicasOf,
    async killMaster(master) {
      const replicas = await replicasOf(master);
      if (replicas.length === 0) throw new Error(`${master.address} has no replica to promote`);
      await untilReplicated(master, replicas);
      await master.kill();
    },
    async awaitPromotion(key, former) {
      const slot = await slotOf(key);
      const port = await untilState(
        `a new master of slot ${slot} (was ${former.address}) and cluster_state:ok on every running node`,
        () => readNodes(nodes),
        (views) => {
          if (agreedMap(views) === undefined) return undefined;
          const promoted = masterPortOf(views, slot);
          const view = views.find((candidate) => candidate.port === promoted);
          return promoted !== former.port && view?.role === 'master' ? promoted : undefined;
        },
      );
      return byPort(port);
    },
    async restart(node) {
      await node.restart();
      await untilSettled(nodes);
    },
    stop,
  };
}

/** Every node running and `cluster_state:ok`, one slot map, 3 masters each with a connected replica. */
function untilSettled(nodes: readonly RedisProcess[]): Promise<true> {
  return untilState(
    'every node running with cluster_state:ok, and 3 masters each with a connected replica',
    () => readNodes(nodes),
    (views) => {
      const map = agreedMap(views);
      if (map === undefined || views.some((view) => view.role === 'down')) return undefined;
      const masters = new Set(map.map((range) => Number(range.split('@')[1])));
      const replicas = views.filter((view) => view.role === 'slave');
      const whole =
        masters.size === MASTERS &&
        replicas.length === MASTERS &&
        replicas.every(
          (replica) =>
            replica.link === 'connected' &&
            masters.has(replica.masterPort ?? 0) &&
            views.some(
              (master) =>
                master.port === replica.masterPort && master.replicaPorts.includes(replica.port),
            ),
        );
      return whole ? true : undefined;
    },
  );
}

/**
 * The slot map every running node holds, when they all say `cluster_state:ok` and hold the
 * same one; undefined otherwise.
 */
function agreedMap(views: readonly NodeView[]): readonly string[] | undefined {
  const running = views.filter((view) => view.role !== 'down');
  if (running.length === 0 || running.some((view) => view.state !== 'ok')) return undefined;
  const [first] = running;
  const same = running.every((view) => view.slots.join(' ') === first?.slots.join(' '));
  return same ? first?.slots : undefined;
}

function masterPortOf(views: readonly NodeView[], slot: number): number | undefined {
  const map = agreedMap(views) ?? [];
  for (const range of map) {
    const [slots = '', port = ''] = range.split('@');
    const [start = '', end = ''] = slots.split('-');
    if (Number(start) <= slot && slot <= Number(end)) return Number(port);
  }
  return undefined;
}

function readNodes(nodes: readonly RedisProcess[]): Promise<NodeView[]> {
  return Promise.all(nodes.map(readNode));
}

async function readNode(node: RedisProcess): Promise<NodeView> {
  if (node.pid === undefined)
    return { port: node.port, state: 'down', role: 'down', replicaPorts: [], slots: [] };
  const [info, role, slots] = await Promise.all([
    node.call('CLUSTER', 'INFO'),
    node.call('ROLE') as Promise<unknown[]>,
    node.call('CLUSTER', 'SLOTS') as Promise<[number, number, [string, number]][]>,
  ]);
  const [kind] = role;
  return {
    port: node.port,
    state: infoFields(info).cluster_state ?? '',
    role: String(kind),
    ...(kind === 'slave' ? { masterPort: Number(role[2]), link: String(role[3]) } : {}),
    replicaPorts:
      kind === 'master'
        ? (role[2] as [string, string, string][]).map(([, port]) => Number(port))
        : [],
    slots: slots
      .map(([start, end, [, port]]) => ({ start, text: `${start}-${end}@${port}` }))
      .sort((a, b) => a.start - b.start)
      .map((range) => range.text),
  };
}

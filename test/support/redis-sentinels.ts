import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  listenConfig,
  pairsToRecord,
  serverConfig,
  startRedisProcesses,
  untilReplicated,
  type RedisProcess,
  type RedisTlsFiles,
} from './redis-process.js';
import { untilState } from './until-state.js';

/**
 * down-after-milliseconds: a master silent this long is down for a sentinel. At 2 s a
 * failover takes about 3-4 s here (Redis's default, 30 s, would make it 30 s and more); not
 * 1 s, for the same reason as the Cluster's node timeout (a starved process on two shared
 * cores). failover-timeout 5 s: a failover that stalls is tried again after twice this, not
 * after the default's 6 minutes.
 */
export const SENTINEL_DOWN_AFTER_MS = 2_000;
const FAILOVER_TIMEOUT_MS = 5_000;
const SENTINELS = 3;
const QUORUM = 2;

/** A master, its replica and 3 sentinels on loopback. */
export interface RedisSentinels {
  /** The master group's name (`credentials.redis.sentinelName`). */
  readonly name: string;
  /** The two data nodes: the first master, then its replica. */
  readonly servers: readonly RedisProcess[];
  readonly sentinels: readonly RedisProcess[];
  /** Every sentinel's `127.0.0.1:port` (`credentials.redis.nodes` in sentinel mode). */
  readonly sentinelAddresses: readonly string[];
  /** The master every sentinel names now (SENTINEL get-master-addr-by-name). */
  master(): Promise<RedisProcess>;
  /** Waits until the replica holds what the master has written so far, then SIGKILLs the master by PID. */
  killMaster(): Promise<RedisProcess>;
  /**
   * Resolves with the new master once every sentinel has announced `+switch-master` away
   * from `former` (the event, on a subscribed connection), names it, and its ROLE is master.
   */
  awaitPromotion(former: RedisProcess): Promise<RedisProcess>;
  /**
   * Starts a killed server again as a replica of the current master (a sentinel would
   * convert a returning old master itself, but only 8-16 s later: its INFO period and four
   * hello periods), and resolves once it is attached and every sentinel lists it as a
   * healthy replica.
   */
  restart(server: RedisProcess): Promise<void>;
  /** Kills every process by its PID and removes their directories. */
  stop(): Promise<void>;
}

/** A `+switch-master` one sentinel announced: its index, and the old master's port. */
interface SwitchMaster {
  readonly sentinel: number;
  readonly from: number;
}

export interface RedisSentinelsOptions {
  /** The master group's name; `mymaster` by default. */
  readonly name?: string;
  /** Every server and sentinel on TLS only, to clients and to each other. */
  readonly tls?: RedisTlsFiles;
  /** The password the servers ask of their clients (the sentinels ask none, and give it). */
  readonly password?: string;
}

export async function startRedisSentinels(
  options: RedisSentinelsOptions = {},
): Promise<RedisSentinels> {
  const { name = 'mymaster', tls, password } = options;
  const root = mkdtempSync(join(tmpdir(), 'gw-redis-sentinel-'));
  const processes: RedisProcess[] = [];
  const subscribers: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const subscriber of subscribers) subscriber.disconnect();
    await Promise.all(processes.map((proc) => proc.kill()));
    rmSync(root, { recursive: true, force: true });
  };
  const switches: SwitchMaster[] = [];
  const waiters: { matches: (event: SwitchMaster) => boolean; resolve: () => void }[] = [];
  let servers: RedisProcess[];
  let sentinels: RedisProcess[];
  try {
    const [master] = await startRedisProcesses([serverOptions(root, { tls, password }, 'master')]);
    if (master === undefined) throw new Error('no master');
    processes.push(master);
    const [replica] = await startRedisProcesses([
      serverOptions(root, { tls, password }, 'replica', `replicaof 127.0.0.1 ${master.port}`),
    ]);
    if (replica === undefined) throw new Error('no replica');
    processes.push(replica);
    servers = [master, replica];
    // Attached before any sentinel looks: a sentinel reads a replica's link state every
    // 10 s, so one first seen syncing would stay unhealthy to it for that long.
    await untilAttached(replica, master);
    sentinels = await startRedisProcesses(
      Array.from({ length: SENTINELS }, (_, i) =>
        sentinelOptions(root, { tls, password }, i, name, master.port),
      ),
    );
    processes.push(...sentinels);
    for (const [index, sentinel] of sentinels.entries()) {
      const subscriber = new Redis({
        host: '127.0.0.1',
        port: sentinel.port,
        ...(tls === undefined ? {} : { tls: { ca: readFileSync(tls.caFile) } }),
      });
      subscriber.on('error', () => undefined);
      subscribers.push(subscriber);
      subscriber.on('message', (_channel: string, message: string) => {
        // "<name> <old ip> <old port> <new ip> <new port>"
        const [group, , from] = message.split(' ');
        if (group !== name) return;
        const event = { sentinel: index, from: Number(from) };
        switches.push(event);
        for (const waiter of waiters.filter((w) => w.matches(event))) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      });
      await subscriber.subscribe('+switch-master');
    }
    await untilState(
      `every sentinel to know the master ${master.address}, its replica and the ${SENTINELS - 1} other sentinels`,
      () => Promise.all(sentinels.map((sentinel) => readSentinel(sentinel, name))),
      (views) =>
        views.every(
          (view) =>
            view.master.flags === 'master' &&
            view.master.port === String(master.port) &&
            view.master['num-other-sentinels'] === String(SENTINELS - 1) &&
            healthyReplica(view.replicas, replica.port),
        )
          ? true
          : undefined,
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = (port: number): RedisProcess => {
    const server = servers.find((candidate) => candidate.port === port);
    if (server === undefined) throw new Error(`no server of this set on port ${port}`);
    return server;
  };
  const master = async (): Promise<RedisProcess> => {
    const port = await untilState(
      'the sentinels to agree on the master',
      () =>
        Promise.all(
          sentinels.map((sentinel) => sentinel.call('SENTINEL', 'get-master-addr-by-name', name)),
        ),
      (addresses) => {
        const ports = new Set(addresses.map((address) => Number((address as string[])[1])));
        return ports.size === 1 ? [...ports][0] : undefined;
      },
    );
    return byPort(port ?? 0);
  };
  /** Resolves once `sentinel` has announced a switch away from `from`. */
  const switched = (sentinel: number, from: number): Promise<void> =>
    switches.some((event) => event.sentinel === sentinel && event.from === from)
      ? Promise.resolve()
      : new Promise((resolve) =>
          waiters.push({ matches: (e) => e.sentinel === sentinel && e.from === from, resolve }),
        );

  return {
    name,
    servers,
    sentinels,
    sentinelAddresses: sentinels.map((sentinel) => sentinel.address),
    master,
    async killMaster() {
      const current = await master();
      const replicas = servers.filter((server) => server !== current && server.pid !== undefined);
      await untilReplicated(current, replicas);
      await current.kill();
      return current;
    },
    async awaitPromotion(former) {
      await Promise.all(sentinels.map((_, index) => switched(index, former.port)));
      const promoted = await master();
      if (promoted === former) throw new Error(`the sentinels still name ${former.address}`);
      await untilState(
        `${promoted.address} to say it is a master`,
        () => promoted.call('ROLE') as Promise<unknown[]>,
        ([role]) => (role === 'master' ? true : undefined),
      );
      return promoted;
    },
    async restart(server) {
      const current = await master();
      await server.restart(['--replicaof', '127.0.0.1', String(current.port)]);
      await untilAttached(server, current);
      await untilState(
        `every sentinel to list ${server.address} as a healthy replica`,
        () => Promise.all(sentinels.map((sentinel) => readSentinel(sentinel, name))),
        (views) =>
          views.every((view) => healthyReplica(view.replicas, server.port)) ? true : undefined,
      );
    },
    stop,
  };
}

/** What every process of the set shares: TLS, and the servers' password. */
interface SetSecurity {
  readonly tls: RedisTlsFiles | undefined;
  readonly password: string | undefined;
}

function serverOptions(
  root: string,
  { tls, password }: SetSecurity,
  role: string,
  ...extra: string[]
) {
  const dir = join(root, role);
  return {
    command: 'redis-server' as const,
    dir,
    tls,
    password,
    config: ([port = 0]: readonly number[]) =>
      [...serverConfig(port, dir, tls, password), ...extra].join('\n'),
  };
}

function sentinelOptions(
  root: string,
  { tls, password }: SetSecurity,
  index: number,
  name: string,
  masterPort: number,
) {
  const dir = join(root, `sentinel-${index}`);
  return {
    command: 'redis-sentinel' as const,
    dir,
    tls,
    // A sentinel rewrites its config file (what it learns of replicas and other sentinels).
    config: ([port = 0]: readonly number[]) =>
      [
        ...listenConfig(port, tls),
        'bind 127.0.0.1',
        `dir "${dir}"`,
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} ${QUORUM}`,
        `sentinel down-after-milliseconds ${name} ${SENTINEL_DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${name} ${FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${name} 1`,
        ...(password === undefined ? [] : [`sentinel auth-pass ${name} "${password}"`]),
      ].join('\n'),
  };
}

function untilAttached(replica: RedisProcess, master: RedisProcess): Promise<true> {
  return untilState(
    `${replica.address} to be attached to ${master.address}`,
    () => replica.call('ROLE') as Promise<unknown[]>,
    ([role, , port, link]) =>
      role === 'slave' && port === master.port && link === 'connected' ? true : undefined,
  );
}

async function readSentinel(sentinel: RedisProcess, name: string) {
  const [master, replicas] = await Promise.all([
    sentinel.call('SENTINEL', 'MASTER', name),
    sentinel.call('SENTINEL', 'REPLICAS', name) as Promise<unknown[]>,
  ]);
  return { master: pairsToRecord(master), replicas: replicas.map(pairsToRecord) };
}

/** Listed with flags exactly `slave` (not down, not disconnected) and its master link up. */
function healthyReplica(replicas: readonly Record<string, string>[], port: number): boolean {
  return replicas.some(
    (replica) =>
      replica.port === String(port) &&
      replica.flags === 'slave' &&
      replica['master-link-status'] === 'ok',
  );
}

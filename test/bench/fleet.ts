// The fleet section (issue 14, point 6): what one request costs Redis, on one standalone
// master and on a 3-master/3-replica Cluster, with rate limits off, exact (a script per
// request) and lease (a script per lease: issue 28), and so how many requests/s a master
// carries. The arithmetic is fleet-figures.ts's; docs/benchmark.md
// turns it into a capacity model.
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { basicHeader } from '../support/basic-header.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { startRedisCluster } from '../support/redis-cluster.js';
import {
  coresFor,
  fleetFigures,
  medianFigures,
  nodeDeltas,
  scriptMicros,
  parseNodeInfo,
  type FleetFigures,
  type NodeSample,
} from './fleet-figures.js';
import { cpuSeconds, pairKey } from './measure.js';
import { httpRequest } from './processes.js';
import { formatNumber, summarize, table } from './report.js';
import {
  cycle,
  row,
  runRounds,
  type BenchContext,
  type Row,
  type SectionResult,
} from './scenarios.js';
import {
  clusterWrite,
  pairCommands,
  redisPipe,
  startGateway,
  startRedis,
  type RedisServer,
  type Target,
} from './targets.js';

/** Pairs, each of its own subject: their keys spread over the Cluster's slots by subject. */
const FLEET_PAIRS = 300;
const FLEET_SET = { prefix: 'ak_fleet_', digits: 18 } as const;
/** The pairs' bcrypt cost: each is verified once, before any measured load. */
const FLEET_COST = 4;
/**
 * The rows of each topology: limits off, and a never-refusing credential limit in each mode
 * (exact: a script run per request; lease: one per lease of a bucket, per process).
 */
const LIMIT_ROWS = ['off', 'exact', 'lease'] as const;
type LimitRow = (typeof LIMIT_ROWS)[number];
/** Requests at once while every gateway verifies (and caches) every pair once. */
const PRIME_CONCURRENCY = 8;
/** The capacity example under the table: this many requests/s, machines at this utilisation. */
const EXAMPLE_RPS = 100_000;
const EXAMPLE_UTILISATION = 0.5;

/** A Redis node the section samples: its process and its INFO. */
interface ProbedNode {
  readonly address: string;
  readonly pid: () => number | undefined;
  /** INFO commandstats, replication and keyspace. */
  readonly info: () => Promise<string>;
}

const INFO_SECTIONS = ['INFO', 'commandstats', 'replication', 'keyspace'] as const;

/** One measured setup: a Redis topology and what the gateways are told of it. */
interface Setup {
  readonly id: 'one' | 'cluster';
  readonly label: string;
  readonly nodes: readonly ProbedNode[];
  /** The URL the fixture's configuration gets (a Cluster's first node; its mode reads nodes). */
  readonly url: string;
  /** Laid over the fixture's `credentials.redis`. */
  readonly redis: { readonly mode: 'standalone' } | { mode: 'cluster'; nodes: string[] };
  /** The master the saturation probe drives, and a key prefix whose slot it serves. */
  readonly probe: SaturationTarget;
}

interface SaturationTarget {
  readonly port: number;
  readonly pid: () => number | undefined;
  readonly call: (command: string, ...args: string[]) => Promise<unknown>;
  readonly keyPrefix: string;
}

/**
 * A stand-in for one bucket take, as redis-benchmark can send it: a read, then a write with an
 * expiry, of one key. (The gateway's own scripts take named arguments the runner lays out.)
 */
const STAND_IN_SCRIPT =
  'local v = redis.call("GET", KEYS[1]) redis.call("SET", KEYS[1], ARGV[1], "PX", 60000) return v';
/** The saturation probe's runs: one connection (each command alone), then 50 (batched). */
const PROBE_CONNECTIONS = [1, 50] as const;
const PROBE_COMMANDS = 100_000;

/**
 * redis-benchmark sending the stand-in by EVALSHA to `target` on `connections` connections:
 * the master's CPU per command (/proc) at that load, and the commands/s it answered.
 */
async function saturate(
  group: BenchContext['group'],
  target: SaturationTarget,
  connections: number,
): Promise<{ rps: number; microsPerCommand: number }> {
  const sha = String(await target.call('SCRIPT', 'LOAD', STAND_IN_SCRIPT));
  const pid = target.pid();
  if (pid === undefined) throw new Error('the probed master is not running');
  const bench = group.start(
    `redis-benchmark-${target.port}-${connections}`,
    'redis-benchmark',
    [
      ...['-h', '127.0.0.1', '-p', String(target.port), '-c', String(connections)],
      ...['-n', String(PROBE_COMMANDS), '-r', '100000', '--csv'],
      ...['EVALSHA', sha, '1', `${target.keyPrefix}rl:__rand_int__`, '1'],
    ],
    { output: 'pipe' },
  );
  let out = '';
  bench.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const before = cpuSeconds([pid]);
  await bench.exited;
  const cpu = cpuSeconds([pid]) - before;
  // --csv: a header line, then `"<command>","<rps>",…`.
  const rps = Number(/^"EVALSHA[^"]*","([\d.]+)"/m.exec(out)?.[1]);
  if (!Number.isFinite(rps)) throw new Error(`redis-benchmark: no result in ${out}`);
  return { rps, microsPerCommand: (cpu * 1e6) / PROBE_COMMANDS };
}

export interface FleetFixture {
  readonly prefix: string;
  readonly secret: string;
  /** The bench's gateway configuration, Redis at `url` under `prefix`. */
  readonly gatewayConfig: (url: string) => GatewayConfigInput;
}

interface Sample extends NodeSample {
  readonly keys: number;
}

async function sample(nodes: readonly ProbedNode[]): Promise<Sample[]> {
  return Promise.all(
    nodes.map(async (node) => {
      const { role, scriptCalls, keys } = parseNodeInfo(await node.info());
      const pid = node.pid();
      const cpu = pid === undefined ? NaN : cpuSeconds([pid]);
      return { address: node.address, role, cpuSeconds: cpu, scriptCalls, keys };
    }),
  );
}

/** Every pair once through `gateway`, a few at a time: each is verified and cached. */
async function prime(gateway: Target, secret: string): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < FLEET_PAIRS; i = next++) {
      const answer = await httpRequest(gateway.url, {
        headers: { authorization: basicHeader(pairKey(FLEET_SET, i), secret) },
      });
      if (answer.status !== 200)
        throw new Error(`${gateway.name}: pair ${i} answered ${answer.status}: ${answer.body}`);
    }
  };
  await Promise.all(Array.from({ length: PRIME_CONCURRENCY }, worker));
}

/** The two topologies, seeded with the same pairs; both stopped when the bench's group closes. */
async function startSetups(ctx: BenchContext, fixture: FleetFixture): Promise<Setup[]> {
  const { group } = ctx;
  const n = FLEET_PAIRS.toLocaleString('en-US');
  const secretHash = await bcrypt.hash(fixture.secret, FLEET_COST);
  const commands = (): Generator<string[]> =>
    pairCommands({
      prefix: fixture.prefix,
      keyOf: (i) => pairKey(FLEET_SET, i),
      subjectOf: (i) => `fleet-${i}`,
      from: 0,
      count: FLEET_PAIRS,
      secretHash,
    });
  // A master with a replica, as each Cluster master has: feeding a replica is part of what a
  // write costs a master, so both setups pay it.
  ctx.onNote(`fleet: starting a Redis master and its replica; seeding ${n} pairs`);
  const one = await startRedis(group, 'redis-fleet');
  const replica = await startRedis(group, 'redis-fleet-replica', one);
  await redisPipe(group, one, commands());
  // The group stops the servers before it closes these clients: no reconnection, no error
  // event left unhandled meanwhile (a sample that fails still rejects).
  const clientOf = (server: RedisServer): Redis => {
    const client = new Redis(server.url, { lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => undefined);
    group.onClose(() => Promise.resolve(client.disconnect()));
    return client;
  };
  const oneClient = clientOf(one);
  const standalone = [
    { server: one, client: oneClient },
    { server: replica, client: clientOf(replica) },
  ];
  ctx.onNote(`fleet: starting a Redis Cluster of 3 masters and 3 replicas; seeding ${n} pairs`);
  const cluster = await startRedisCluster();
  group.onClose(() => cluster.stop());
  await clusterWrite(cluster.seeds, commands());
  const probed = await cluster.masterOf('{fleet-probe}:');
  return [
    {
      id: 'one',
      label: '1 master + 1 replica',
      nodes: standalone.map(({ server, client }) => ({
        address: `127.0.0.1:${server.port}`,
        pid: () => server.started.pid,
        info: async () => String(await client.call(...INFO_SECTIONS)),
      })),
      url: one.url,
      redis: { mode: 'standalone' },
      probe: {
        port: one.port,
        pid: () => one.started.pid,
        call: (command, ...args) => oneClient.call(command, ...args),
        keyPrefix: '{fleet-probe}:',
      },
    },
    {
      id: 'cluster',
      label: '3+3 Cluster',
      nodes: cluster.nodes.map((node) => ({
        address: node.address,
        pid: () => node.pid,
        info: async () => String(await node.call(...INFO_SECTIONS)),
      })),
      url: `redis://${cluster.seeds[0] ?? ''}`,
      redis: { mode: 'cluster', nodes: [...cluster.seeds] },
      probe: {
        port: probed.port,
        pid: () => probed.pid,
        call: (command, ...args) => probed.call(command, ...args),
        keyPrefix: '{fleet-probe}:',
      },
    },
  ];
}

export async function fleetSection(
  ctx: BenchContext,
  fixture: FleetFixture,
): Promise<SectionResult> {
  const { group, options } = ctx;
  const n = FLEET_PAIRS.toLocaleString('en-US');
  const title = `fleet: Redis CPU per request on 1 master (and its replica) and on a 3+3 Cluster, rate limits off, exact and lease (${n} cached pairs of ${n} subjects, engine ${options.engine})`;
  const setups = await startSetups(ctx, fixture);
  const keysPerMaster = (await sample(setups[1]?.nodes ?? []))
    .filter((node) => node.role === 'master')
    .map((node) => node.keys);

  const rows: Row[] = [];
  const figures = new Map<string, FleetFigures[]>();
  const masters = new Map<string, Set<string>>();
  for (const setup of setups) {
    for (const mode of LIMIT_ROWS) {
      const id = `fleet-${setup.id}-limits-${mode}`;
      ctx.onNote(`fleet: starting the gateway on ${setup.label}, rate limits ${mode}`);
      const base = fixture.gatewayConfig(setup.url);
      const gateway = await startGateway(group, `gateway-${id}`, {
        ...base,
        credentials: {
          ...base.credentials,
          // Only the layout of this version: no fallback read into the single slot.
          redis: { ...base.credentials?.redis, ...setup.redis, singleSlotPrefix: false },
        },
        // Cached for the whole section: a pair that left the cache would cost a bcrypt check,
        // and 64 connections checking it at once would meet the lockout's one attempt.
        auth: { ...base.auth, basic: { ...base.auth?.basic, cache: { ttlSec: 86_400 } } },
        ...(mode === 'off'
          ? {}
          : { rateLimits: { credential: { requests: 1_000_000_000, periodSec: 1, mode } } }),
      });
      ctx.onNote(`fleet: ${gateway.name} verifies each of the ${n} pairs once`);
      await prime(gateway, fixture.secret);
      let before: Sample[] = [];
      const runs: FleetFigures[] = [];
      const seen = new Set<string>();
      figures.set(id, runs);
      masters.set(id, seen);
      rows.push(
        row({
          id,
          label: `${setup.label}, rate limits ${mode === 'off' ? 'off' : `${mode} (never refusing)`}`,
          target: gateway,
          spec: () => ({
            url: gateway.url,
            connections: options.connections,
            seconds: options.duration,
            pairs: cycle(FLEET_PAIRS, 0, fixture.secret, FLEET_SET),
          }),
          beforeRun: async () => {
            before = await sample(setup.nodes);
          },
          afterRun: async (run) => {
            const deltas = nodeDeltas(before, await sample(setup.nodes));
            for (const node of deltas) if (node.role === 'master') seen.add(node.address);
            if (run.valid) runs.push(fleetFigures(deltas, run.wrk.requests, run.wrk.seconds));
          },
        }),
      );
    }
  }
  await runRounds(ctx, 'fleet', rows);
  // After the rounds, with the gateways idle: a master's CPU per command depends on its load
  // (how many commands share each pass of its event loop), which one gateway on these cores
  // cannot push to saturation.
  const probes: string[] = [];
  for (const setup of setups)
    for (const connections of PROBE_CONNECTIONS) {
      ctx.onNote(`fleet: redis-benchmark on ${setup.label}'s master, ${connections} connection(s)`);
      const { rps, microsPerCommand } = await saturate(group, setup.probe, connections);
      probes.push(
        `${setup.label === '3+3 Cluster' ? 'a Cluster master' : 'the lone master'}, ${connections} connection${connections === 1 ? '' : 's'}: ${formatNumber(rps, 'int')} commands/s, ${formatNumber(microsPerCommand, 'ms')} µs of its CPU each`,
      );
    }
  return fleetResult(title, rows, figures, masters, keysPerMaster, probes);
}

/** A setup's figures: the gateway row's medians and Redis's (fleet-figures.ts). */
interface SetupSummary extends FleetFigures {
  readonly gatewayRps: number;
  readonly gatewayMicrosPerRequest: number;
}

function fleetResult(
  title: string,
  rows: Row[],
  figures: ReadonlyMap<string, readonly FleetFigures[]>,
  masters: ReadonlyMap<string, ReadonlySet<string>>,
  keysPerMaster: readonly number[],
  probes: readonly string[],
): SectionResult {
  const summary: Record<string, SetupSummary> = {};
  for (const r of rows) {
    const gateway = summarize(r);
    summary[r.id] = {
      ...medianFigures(figures.get(r.id) ?? []),
      gatewayRps: gateway.rps,
      gatewayMicrosPerRequest: gateway.cpuMicrosPerRequest,
    };
  }
  const lines = rows.map((r) => {
    const s = summary[r.id];
    const each = (values: readonly number[] | undefined, kind: 'int' | 'ms'): string =>
      (values ?? []).map((value) => formatNumber(value, kind)).join(' / ');
    return [
      r.label,
      formatNumber(s?.mastersMicrosPerRequest ?? NaN, 'ms'),
      each(s?.masterMicrosPerRequest, 'ms'),
      formatNumber(s?.replicasMicrosPerRequest ?? NaN, 'ms'),
      (s?.scriptCallsPerRequest ?? NaN).toFixed(3),
      each(s?.scriptCallsPerMaster, 'int'),
      formatNumber(s?.spread ?? NaN, 'ratio'),
      formatNumber(s?.oneMasterRps ?? NaN, 'int'),
      formatNumber(s?.theseMastersRps ?? NaN, 'int'),
      formatNumber(s?.busiestMasterPct ?? NaN, 'pct'),
    ];
  });
  const of = (setup: Setup['id'], mode: LimitRow): SetupSummary | undefined =>
    summary[`fleet-${setup}-limits-${mode}`];
  const mastersMicros = (setup: Setup['id'], mode: LimitRow): number =>
    of(setup, mode)?.mastersMicrosPerRequest ?? NaN;
  const limitCost = (setup: Setup['id'], mode: 'exact' | 'lease'): string =>
    formatNumber(mastersMicros(setup, mode) - mastersMicros(setup, 'off'), 'ms');
  const perScript = (setup: Setup['id']): string =>
    formatNumber(
      mastersMicros(setup, 'exact') / (of(setup, 'exact')?.scriptCallsPerRequest ?? NaN),
      'ms',
    );
  const exactOne = of('one', 'exact');
  const exactCluster = of('cluster', 'exact');
  const capacity = (mode: 'exact' | 'lease'): string => {
    const s = of('cluster', mode);
    const redisMicros = s?.mastersMicrosPerRequest ?? NaN;
    const gatewayMicros = s?.gatewayMicrosPerRequest ?? NaN;
    const masters = `${coresFor(EXAMPLE_RPS, redisMicros, EXAMPLE_UTILISATION)} Redis masters (${formatNumber(redisMicros, 'ms')} µs each)`;
    const cores = `${coresFor(EXAMPLE_RPS, gatewayMicros, EXAMPLE_UTILISATION)} gateway cores (${formatNumber(gatewayMicros, 'int')} µs each)`;
    if (mode === 'exact') return `exact: ${masters} and ${cores}`;
    // A lease row's µs include the nodes' idle work (the off row's), which a light load
    // makes large per request; its script runs, at what one cost in the exact row beyond
    // the off row, are the part that grows with the traffic.
    const calls = s?.scriptCallsPerRequest ?? NaN;
    const perRun = scriptMicros(exactCluster, of('cluster', 'off'));
    const scripted = calls * perRun;
    return `lease: ${masters}, or ${coresFor(EXAMPLE_RPS, scripted, EXAMPLE_UTILISATION)} by its script runs alone (${calls.toFixed(3)} per request × the exact rows' ${formatNumber(perRun, 'ms')} µs per run = ${formatNumber(scripted, 'ms')} µs), and ${cores}`;
  };
  const changed = [...masters].filter(([id, seen]) => id.includes('cluster') && seen.size > 3);
  const notes = [
    table(
      [
        'Redis',
        'masters µs/req',
        'per master µs/req',
        'replicas µs/req',
        'scripts/req',
        'scripts per master',
        'spread',
        '1 master carries req/s',
        'these masters carry req/s',
        'busiest master',
      ],
      lines,
    ),
    "µs/req: CPU (user + system, /proc/<pid>/stat) of each redis-server over a run / the requests the gateway answered; masters summed, replicas apart. It includes a node's idle work (serverCron, the Cluster bus): most of what the limits-off rows show. scripts: EVALSHA + EVAL calls (INFO commandstats) per master; spread = most / fewest.",
    `1 master carries = 1e6 / masters µs per request: the requests/s one master serves at 100% of one core. These masters carry = 1e6 / the busiest master's µs per request. Both derived: on these shared cores one gateway cannot saturate a master (the busiest ran at the % of one core in the last column).`,
    `with exact limits (a script per request), 3 masters carry ${formatNumber((exactCluster?.theseMastersRps ?? NaN) / (exactOne?.oneMasterRps ?? NaN), 'ratio')}× what 1 master does: a script costs a Cluster master ${perScript('cluster')} µs against ${perScript('one')} µs on the lone master, which ran ${formatNumber((exactOne?.busiestMasterPct ?? NaN) / (exactCluster?.busiestMasterPct ?? NaN), 'ratio')}× as busy (the saturation probe below tells the causes apart: at equal load a Cluster master and the lone master spend alike per command, and a master's CPU per command falls as its load rises, its event loop serving more commands per pass)`,
    `saturation probe (redis-benchmark, EVALSHA of a GET and a SET PX of one key, ${PROBE_COMMANDS.toLocaleString('en-US')} commands): ${probes.join('; ')}`,
    `rate limits cost the masters (on − off): exact ${limitCost('one', 'exact')} µs per request on 1 master, ${limitCost('cluster', 'exact')} µs summed on the Cluster; lease ${limitCost('one', 'lease')} and ${limitCost('cluster', 'lease')} µs (script runs per request: exact ${(exactOne?.scriptCallsPerRequest ?? NaN).toFixed(3)} / ${(exactCluster?.scriptCallsPerRequest ?? NaN).toFixed(3)}, lease ${(of('one', 'lease')?.scriptCallsPerRequest ?? NaN).toFixed(3)} / ${(of('cluster', 'lease')?.scriptCallsPerRequest ?? NaN).toFixed(3)}); keys per Cluster master after seeding: ${keysPerMaster.join(' / ')}`,
    `for ${EXAMPLE_RPS.toLocaleString('en-US')} rate-limited requests/s at ${EXAMPLE_UTILISATION * 100}% utilisation, from the Cluster rows: ${capacity('exact')}; ${capacity('lease')} (gateway µs: this gateway's CPU per request)`,
    ...(changed.length === 0
      ? []
      : [`(a Cluster master changed during ${changed.map(([id]) => id).join(', ')}: a failover)`]),
  ];
  return { id: 'fleet', title, rows, notes, extra: { fleet: summary, keysPerMaster } };
}

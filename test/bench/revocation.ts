// The revocation section: how long a revocation takes to reach every worker of a fleet on a
// Redis Cluster, before and after the failover of a master under a subscription, what the
// gateway's lag metric says of it, and what ioredis's own sharded subscriber does through the
// same failover (the alternative docs/ARCHITECTURE.md's design decisions weigh).
import { redisConfig } from '../support/redis-config.js';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import bcrypt from 'bcrypt';
import { Cluster, Redis } from 'ioredis';
import { basicHeader } from '../support/basic-header.js';
import {
  CLUSTER_NODE_TIMEOUT_MS,
  startRedisCluster,
  type RedisCluster,
} from '../support/redis-cluster.js';
import type { RedisProcess } from '../support/redis-process.js';
import { freePort } from '../support/redis-server.js';
import { openRedisStore } from '../support/redis-store.js';
import { sample } from '../support/scrape-metric.js';
import { httpRequest, type Started } from './processes.js';
import { formatNumber, percentile } from './report.js';
import type { BenchContext, SectionResult } from './scenarios.js';
import { startGateway, type Target } from './targets.js';

const KEY_PREFIX = 'bench:';
const WORKERS = 2;
/** Revocations measured on each side of the failover, per round of the bench. */
const TRIALS_PER_ROUND = 10;
/** The lag histogram's bounds (observability/metrics.ts), in seconds. */
const LAG_BOUNDS = [
  '0.001',
  '0.0025',
  '0.005',
  '0.01',
  '0.025',
  '0.05',
  '0.1',
  '0.25',
  '0.5',
  '1',
  '2.5',
  '5',
  '10',
];
const LAG = 'gateway_revocation_lag_seconds';
/** A guard on each wait for a log line or a message, never a bound on what is measured. */
const GUARD_MS = 60_000;

type LogLine = Record<string, unknown>;

interface Gateway {
  readonly name: string;
  readonly target: Target;
  readonly adminPort: number;
}

/** A keep-alive connection that one worker of one gateway serves for its whole life. */
interface Pinned {
  readonly gateway: Gateway;
  readonly worker: number;
  readonly agent: Agent;
}

interface Pair {
  readonly key: string;
  readonly secret: string;
}

interface Phase {
  /** Milliseconds from the DELETE sent through gateway A to the last worker's 401, per trial. */
  readonly allWorkersMs: number[];
  /** The same from the DELETE's 200. */
  readonly afterAnswerMs: number[];
  /** Lag histogram applications in the phase, summed over both gateways, per bucket bound. */
  readonly lag: { readonly count: number; readonly sumSec: number; readonly p99Le: string };
}

export async function revocationSection(
  ctx: BenchContext,
  upstream: Target,
): Promise<SectionResult> {
  const { group, options } = ctx;
  const trials = options.rounds * TRIALS_PER_ROUND;
  ctx.onNote('revocation: starting a Redis Cluster (3 masters, 3 replicas)');
  const cluster = await startRedisCluster({ parentDir: group.dir });
  try {
    const pairs = await seedPairs(cluster, trials * 2 + 1);
    const gateways = await Promise.all(
      ['a', 'b'].map((name) => startClusterGateway(ctx, cluster, upstream, name)),
    );
    const subscriptions = await Promise.all(
      gateways.flatMap((gateway) =>
        workerSlots().map((worker) =>
          untilLogLine(
            gateway.target.started,
            (line) => line.msg === 'revocations subscribed' && line.worker === worker,
          ),
        ),
      ),
    );
    const [pinPair, ...trialPairs] = pairs;
    if (pinPair === undefined) throw new Error('no pair to pin connections with');
    const pins = (await Promise.all(gateways.map((g) => pinWorkers(g, pinPair)))).flat();
    const measure = async (label: string, from: number): Promise<Phase> => {
      ctx.onNote(`revocation: ${trials} revocations through gateway A, ${label} the failover`);
      return runPhase(gateways, pins, trialPairs.slice(from, from + trials));
    };

    ctx.onNote('revocation: PUBLISH and SPUBLISH, publish to receive');
    const channels = await channelLatency(cluster);
    const before = await measure('before', 0);
    const [gatewayA] = gateways;
    const firstNode = String(subscriptions[0]?.node);
    const master = cluster.nodes.find((node) => node.address === firstNode);
    if (gatewayA === undefined || master === undefined)
      throw new Error(`no master at ${firstNode}`);
    const served = subscriptions
      .map((line, i) => ({ line, name: `${i < WORKERS ? 'A' : 'B'}${(i % WORKERS) + 1}` }))
      .filter(({ line }) => line.node === firstNode);
    ctx.onNote(
      `revocation: failing over ${master.address}, under ${served.map((s) => s.name).join(', ')}`,
    );
    const failover = await failOver(cluster, master, gateways, served.length);
    const after = await measure('after', trials);
    for (const pin of pins) pin.agent.destroy();

    const notes = [
      ...channels.map(
        (c) =>
          `${c.what}, ${c.spacing}: publish to receive p50 ${formatNumber(c.p50Ms, 'ms')} ms, p99 ${formatNumber(c.p99Ms, 'ms')} ms, max ${formatNumber(c.maxMs, 'ms')} ms (${c.count} messages)`,
      ),
      phaseNote(`before the failover, ${trials} revocations`, before, pins.length),
      `failover of ${master.address} (the master under gateway A's first worker; it served ${served
        .map((s) => s.name)
        .join(', ')}): replica promoted ${formatSec(failover.promotedMs)} s after the kill; ` +
        `the served workers' subscriptions stood again ${failover.resubscribedMs
          .map((ms) => `${formatNumber(ms, 'ms')} ms`)
          .join(', ')} after the kill (one flush each)`,
      `ioredis ${failover.ioredisVersion} sharded subscriber (SSUBSCRIBE, shardedSubscribers: true) on a channel of that master, SPUBLISH every 10 ms: ` +
        `first message ${formatSec(failover.sharded.firstMessageMs)} s after the kill, ` +
        `${failover.sharded.restarts.toLocaleString('en-US')} subscriber restarts (+subscriber events) meanwhile`,
      phaseNote(`after the failover, ${trials} revocations`, after, pins.length),
      'target: every worker of both gateways within 1 s after a failover; the lag p99 under 100 ms before it',
    ];
    return {
      id: 'revocation',
      title: `revocation: two gateways × --workers ${WORKERS} on a Redis Cluster (3 masters, 3 replicas, cluster-node-timeout ${CLUSTER_NODE_TIMEOUT_MS} ms), cache TTL 300 s`,
      rows: [],
      notes,
      extra: { trials, channels, before: summary(before), failover, after: summary(after) },
    };
  } finally {
    await cluster.stop();
  }
}

const workerSlots = (): number[] => Array.from({ length: WORKERS }, (_, i) => i + 1);

/** `count` pairs of one subject each, written through the store (a Cluster takes no --pipe). */
async function seedPairs(cluster: RedisCluster, count: number): Promise<Pair[]> {
  const store = openRedisStore({
    ...redisConfig('redis://127.0.0.1:6379', KEY_PREFIX),
    mode: 'cluster',
    nodes: [...cluster.seeds],
    commandTimeoutMs: 5_000,
  });
  const secret = 'revocation-bench-secret-0123456789';
  const secretHash = await bcrypt.hash(secret, 4);
  try {
    await store.health.settled;
    const pairs = Array.from({ length: count }, (_, i) => ({
      key: `ak_revbench_${String(i).padStart(6, '0')}`,
      secret,
    }));
    for (const [i, pair] of pairs.entries()) {
      await store.createKey(
        {
          key: pair.key,
          subject: `revbench-${i}`,
          secretHash,
          label: 'bench',
          status: 'active',
          createdAt: new Date().toISOString(),
          scopes: [],
        },
        10,
      );
    }
    return pairs;
  } finally {
    await store.close();
  }
}

async function startClusterGateway(
  ctx: BenchContext,
  cluster: RedisCluster,
  upstream: Target,
  name: string,
): Promise<Gateway> {
  const adminPort = await freePort();
  const target = await startGateway(
    ctx.group,
    `gateway-revocation-${name}`,
    {
      upstreams: {
        accounts: { url: `http://127.0.0.1:${upstream.port}`, engine: ctx.options.engine },
      },
      // The pinned connections must outlive the failover.
      server: { keepAliveTimeoutMs: 600_000 },
      admin: { enabled: true, host: '127.0.0.1', port: adminPort },
      auth: { basic: { cache: { ttlSec: 300 } } },
      // Every revoked pair's first refusal is a failed attempt from 127.0.0.1: hundreds of
      // them would lock the address out (429) long before the section ends.
      lockout: { enabled: false },
      credentials: {
        store: 'redis',
        bcryptCost: 4,
        redis: { mode: 'cluster', nodes: [...cluster.seeds], keyPrefix: KEY_PREFIX },
      },
      // The access line names the worker that served a request.
      logging: { level: 'info', requests: true },
    },
    ['--workers', String(WORKERS)],
  );
  return { name, target, adminPort };
}

/** The gateway's JSON log lines so far (its log file, the workers' lines relayed whole). */
function logLines(started: Started): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of readFileSync(started.logFile, 'utf8').split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      // A line still being written.
    }
  }
  return lines;
}

/** The first log line `match` takes, once written (workers write theirs every 500 ms). */
async function untilLogLine(started: Started, match: (line: LogLine) => boolean): Promise<LogLine> {
  const began = performance.now();
  for (;;) {
    const found = logLines(started).find(match);
    if (found !== undefined) return found;
    if (performance.now() - began > GUARD_MS)
      throw new Error(`${started.name}: no such log line within ${GUARD_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let requestIds = 0;

/** GET /accounts with `pair` on `agent`'s connection (or a fresh one): status, and the id sent. */
function get(
  gateway: Gateway,
  pair: Pair,
  agent: Agent | false,
): Promise<{ status: number; id: string }> {
  const id = `revbench-${(requestIds += 1)}`;
  return new Promise((resolve, reject) => {
    const req = request(
      gateway.target.url,
      { agent, headers: { authorization: basicHeader(pair.key, pair.secret), 'x-request-id': id } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, id }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** One keep-alive connection per worker of `gateway`, told apart by their access lines. */
async function pinWorkers(gateway: Gateway, pair: Pair): Promise<Pinned[]> {
  const pinned = new Map<number, Pinned>();
  while (pinned.size < WORKERS) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { status, id } = await get(gateway, pair, agent);
    if (status !== 200) throw new Error(`pinning: ${gateway.name} answered ${status}`);
    const line = await untilLogLine(gateway.target.started, (l) => l.request_id === id);
    const worker = Number(line.worker);
    if (pinned.has(worker)) agent.destroy();
    else pinned.set(worker, { gateway, worker, agent });
  }
  return [...pinned.values()];
}

/** Repeats a GET on the pinned connection until it answers `want`; others in `passing` allowed. */
async function until(pin: Pinned, pair: Pair, want: number, passing: readonly number[]) {
  for (;;) {
    const { status } = await get(pin.gateway, pair, pin.agent);
    if (status === want) return performance.now();
    if (!passing.includes(status))
      throw new Error(`${pin.gateway.name} worker ${pin.worker}: ${status}, wanted ${want}`);
  }
}

async function runPhase(
  gateways: readonly Gateway[],
  pins: readonly Pinned[],
  pairs: readonly Pair[],
): Promise<Phase> {
  const [gatewayA] = gateways;
  if (gatewayA === undefined) throw new Error('no gateway A');
  const lagBefore = await Promise.all(gateways.map(lagBuckets));
  const allWorkersMs: number[] = [];
  const afterAnswerMs: number[] = [];
  for (const pair of pairs) {
    // Cached by every worker first; a 503 is a store still settling after the promotion.
    for (const pin of pins) await until(pin, pair, 200, [503]);
    const sent = performance.now();
    const revoked = await httpRequest(
      gatewayA.target.url.replace('/accounts', `/keys/${pair.key}?force=true`),
      {
        method: 'DELETE',
        headers: { authorization: basicHeader(pair.key, pair.secret) },
      },
    );
    const answered = performance.now();
    if (revoked.status !== 200)
      throw new Error(`DELETE answered ${revoked.status}: ${revoked.body}`);
    const refused = await Promise.all(pins.map((pin) => until(pin, pair, 401, [200])));
    const last = Math.max(...refused);
    allWorkersMs.push(last - sent);
    afterAnswerMs.push(Math.max(0, last - answered));
  }
  const lagAfter = await Promise.all(gateways.map(lagBuckets));
  return {
    allWorkersMs: allWorkersMs.sort((a, b) => a - b),
    afterAnswerMs: afterAnswerMs.sort((a, b) => a - b),
    lag: lagBetween(lagBefore, lagAfter),
  };
}

interface LagBuckets {
  readonly cumulative: readonly number[];
  readonly count: number;
  readonly sumSec: number;
}

/** The gateway's lag histogram, summed over its workers by the primary's /metrics. */
async function lagBuckets(gateway: Gateway): Promise<LagBuckets> {
  const text = (await httpRequest(`http://127.0.0.1:${gateway.adminPort}/metrics`)).body;
  return {
    cumulative: LAG_BOUNDS.map((le) => sample(text, `${LAG}_bucket{le="${le}"}`)),
    count: sample(text, `${LAG}_count`),
    sumSec: sample(text, `${LAG}_sum`),
  };
}

/** What both gateways observed between two readings; p99 as the bucket bound holding it. */
function lagBetween(before: readonly LagBuckets[], after: readonly LagBuckets[]): Phase['lag'] {
  const diff = (pick: (b: LagBuckets) => number): number =>
    after.reduce((sum, b, i) => sum + pick(b) - pick(before[i] ?? b), 0);
  const count = diff((b) => b.count);
  const bound = LAG_BOUNDS.findIndex(
    (_, j) => diff((b) => b.cumulative[j] ?? 0) >= Math.ceil(count * 0.99),
  );
  return {
    count,
    sumSec: diff((b) => b.sumSec),
    p99Le: bound === -1 ? '+Inf' : (LAG_BOUNDS[bound] ?? ''),
  };
}

interface Failover {
  readonly promotedMs: number;
  /** From the kill to each served worker's `revocations subscribed again` line. */
  readonly resubscribedMs: number[];
  readonly ioredisVersion: string;
  readonly sharded: { readonly firstMessageMs: number; readonly restarts: number };
}

/**
 * Kills `master` (once its replica caught up) and times what follows: the promotion, each
 * served worker's new subscription (its log line's time), and an ioredis sharded subscriber
 * on a channel of that master, next to a publisher sending SPUBLISH every 10 ms.
 */
async function failOver(
  cluster: RedisCluster,
  master: RedisProcess,
  gateways: readonly Gateway[],
  served: number,
): Promise<Failover> {
  const key = await keyOf(cluster, master);
  const channel = await keyOf(cluster, master, 'revbench-shard');
  const seeds = cluster.seeds.map((seed) => {
    const [host = '', port = ''] = seed.split(':');
    return { host, port: Number(port) };
  });
  const publisher = new Cluster(seeds);
  const subscriber = new Cluster(seeds, { shardedSubscribers: true });
  for (const client of [publisher, subscriber]) client.on('error', () => undefined);
  let restarts = 0;
  let killedAt = Number.POSITIVE_INFINITY;
  let firstAfter: number | undefined;
  subscriber.on('+subscriber', () => {
    if (Date.now() > killedAt) restarts += 1;
  });
  const heard = new Promise<void>((resolve) =>
    subscriber.on('smessage', () => {
      if (Date.now() <= killedAt || firstAfter !== undefined) return;
      firstAfter = Date.now();
      resolve();
    }),
  );
  await subscriber.ssubscribe(channel);
  let publishing = true;
  const publishes = (async () => {
    while (publishing) {
      await publisher.spublish(channel, 'tick').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  try {
    await cluster.killMaster(master);
    killedAt = Date.now();
    await cluster.awaitPromotion(key, master);
    const promotedMs = Date.now() - killedAt;
    const lines = await untilResubscribed(gateways, served);
    await Promise.race([heard, new Promise((resolve) => setTimeout(resolve, GUARD_MS))]);
    const version = (
      JSON.parse(
        readFileSync(new URL('../../node_modules/ioredis/package.json', import.meta.url), 'utf8'),
      ) as { version: string }
    ).version;
    return {
      promotedMs,
      resubscribedMs: lines
        .map((line) => Date.parse(String(line.time)) - killedAt)
        .sort((a, b) => a - b),
      ioredisVersion: version,
      sharded: {
        firstMessageMs: firstAfter === undefined ? Number.NaN : firstAfter - killedAt,
        restarts,
      },
    };
  } finally {
    publishing = false;
    await publishes;
    publisher.disconnect();
    subscriber.disconnect();
  }
}

/** The `revocations subscribed again` lines of both gateways, once there are `count`. */
async function untilResubscribed(gateways: readonly Gateway[], count: number): Promise<LogLine[]> {
  const began = performance.now();
  for (;;) {
    const lines = gateways.flatMap((gateway) =>
      logLines(gateway.target.started).filter((l) => l.msg === 'revocations subscribed again'),
    );
    if (lines.length >= count) return lines;
    if (performance.now() - began > GUARD_MS)
      throw new Error(
        `${lines.length} of ${count} subscriptions stood again within ${GUARD_MS} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface ChannelLatency {
  readonly what: string;
  readonly spacing: string;
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Publish to receive, in this process (one clock), on plain connections: PUBLISH on the
 * channel's master heard on another master (the Cluster bus carries it), and SPUBLISH heard
 * on the channel's own master (no bus), for messages apart and back to back.
 */
async function channelLatency(cluster: RedisCluster): Promise<ChannelLatency[]> {
  const channel = '{revbench}:channel';
  const master = await cluster.masterOf(channel);
  const other = await cluster.masterOf(await keyNotOn(cluster, master));
  const connect = (node: RedisProcess): Redis => new Redis({ host: '127.0.0.1', port: node.port });
  const publisher = connect(master);
  const classic = connect(other);
  const sharded = connect(master);
  try {
    await classic.subscribe(channel);
    await sharded.ssubscribe(channel);
    const results: ChannelLatency[] = [];
    const kinds = [
      [
        'PUBLISH heard on another master',
        'message',
        classic,
        (m: string) => publisher.publish(channel, m),
      ],
      [
        'SPUBLISH heard on its own master',
        'smessage',
        sharded,
        (m: string) => publisher.spublish(channel, m),
      ],
    ] as const;
    for (const [spacing, count, gapMs] of [
      ['100 ms apart', 30, 100],
      ['back to back', 200, 0],
    ] as const) {
      for (const [what, event, subscriber, publish] of kinds) {
        const times: number[] = [];
        const all = new Promise<void>((resolve) => {
          const onMessage = (_channel: string, message: string): void => {
            times.push(performance.now() - Number(message));
            if (times.length < count) return;
            subscriber.off(event, onMessage);
            resolve();
          };
          subscriber.on(event, onMessage);
        });
        for (let i = 0; i < count; i += 1) {
          await publish(String(performance.now()));
          if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
        }
        await all;
        times.sort((a, b) => a - b);
        results.push({
          what,
          spacing,
          count,
          p50Ms: percentile(times, 50),
          p99Ms: percentile(times, 99),
          maxMs: times.at(-1) ?? Number.NaN,
        });
      }
    }
    return results;
  } finally {
    for (const connection of [publisher, classic, sharded]) connection.disconnect();
  }
}

/** A key in a slot another master than `master` serves. */
async function keyNotOn(cluster: RedisCluster, master: RedisProcess): Promise<string> {
  for (let i = 0; ; i += 1) {
    const key = `revbench-elsewhere-${i}`;
    if ((await cluster.masterOf(key)) !== master) return key;
  }
}

/** A key (`<name>-<n>`) in a slot `master` serves. */
async function keyOf(cluster: RedisCluster, master: RedisProcess, name = 'revbench-probe') {
  for (let i = 0; ; i += 1) {
    const key = `${name}-${i}`;
    if ((await cluster.masterOf(key)) === master) return key;
  }
}

const formatSec = (ms: number): string => (ms / 1000).toFixed(1);

function phaseNote(what: string, phase: Phase, workers: number): string {
  const ms = (values: readonly number[]): string =>
    `p50 ${formatNumber(percentile(values, 50), 'ms')} ms, p99 ${formatNumber(percentile(values, 99), 'ms')} ms, max ${formatNumber(values.at(-1) ?? Number.NaN, 'ms')} ms`;
  const meanMs = phase.lag.count === 0 ? Number.NaN : (phase.lag.sumSec / phase.lag.count) * 1000;
  return (
    `${what}: refused by all ${workers} workers ${ms(phase.allWorkersMs)} from the DELETE sent ` +
    `(${ms(phase.afterAnswerMs)} from its 200); lag metric over ${phase.lag.count} applications: ` +
    `p99 ≤ ${phase.lag.p99Le === '+Inf' ? '+Inf' : Number(phase.lag.p99Le) * 1000} ms (its bucket), mean ${formatNumber(meanMs, 'ms')} ms`
  );
}

function summary(phase: Phase): Record<string, unknown> {
  const figures = (values: readonly number[]) => ({
    p50Ms: percentile(values, 50),
    p99Ms: percentile(values, 99),
    maxMs: values.at(-1),
  });
  return {
    allWorkers: figures(phase.allWorkersMs),
    afterAnswer: figures(phase.afterAnswerMs),
    lag: phase.lag,
  };
}

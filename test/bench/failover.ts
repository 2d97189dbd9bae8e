// The failover section (issue 14, point 5): the master holding a cached pair killed under
// load, on a Redis Cluster (3 masters, 3 replicas) and on Sentinel (1 master, 1 replica,
// 3 sentinels), each with the breaker on and, for contrast, off. The gateway checks a rate
// limit failing open, so every request runs a script in Redis; keep-alive clients send the
// cached pair as fast as they are answered, and from the kill on a cold client sends pairs
// the gateway never saw (those need Redis: 503 until it answers again). The load process
// records every answer, so the seconds before the kill and those until the promotion are
// set apart; the topology helpers of test/support kill by PID and await the promotion.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { CLUSTER_NODE_TIMEOUT_MS, startRedisCluster } from '../support/redis-cluster.js';
import { SENTINEL_DOWN_AFTER_MS, startRedisSentinels } from '../support/redis-sentinels.js';
import { runCli } from '../support/run-cli.js';
import type { TopologyRedis } from '../support/topology-gateways.js';
import { httpRequest } from './processes.js';
import { formatNumber, table } from './report.js';
import type { BenchContext, SectionResult } from './scenarios.js';
import { startGateway, type Target } from './targets.js';

const KEY_PREFIX = 'bench:';
/** The subject of every pair: its keys (pairs, buckets) are on one master, the one killed. */
const SUBJECT = 'bench-failover';
const LOAD = fileURLToPath(new URL('./servers/load.ts', import.meta.url));
/** The load's imports are `.js` names of `.ts` files (resolve-hook.ts maps them). */
const HOOK = new URL('./resolve-hook.ts', import.meta.url).href;
/** Keep-alive clients of the cached pair (the measurement used 8). */
const CONNECTIONS = 8;
/** Pairs of the cold client: the subject's first is the cached one (keys.maxActivePerSubject 10). */
const COLD_PAIRS = 8;
const COLD_INTERVAL_MS = 50;
/** Load after the promotion, so that "whole again" has answers to be read from. */
const AFTER_PROMOTION_SEC = 3;

/** Cluster and Sentinel, each with the breaker on and off. */
export const FAILOVER_RUNS = 4;

type Topology = 'cluster' | 'sentinel';

/** A started topology: the gateway's `credentials.redis`, and its failover. */
interface Started {
  readonly redis: TopologyRedis;
  /** Kills the master of `key` (once its replica caught up); resolves once it is dead. */
  kill(key: string): Promise<void>;
  /** Resolves once the topology has promoted the killed master's replica. */
  promoted(): Promise<void>;
  stop(): Promise<void>;
}

async function startTopology(ctx: BenchContext, topology: Topology): Promise<Started> {
  if (topology === 'cluster') {
    const cluster = await startRedisCluster();
    ctx.group.onClose(() => cluster.stop());
    let awaited: () => Promise<void> = () => Promise.reject(new Error('nothing killed'));
    return {
      redis: { mode: 'cluster', nodes: [...cluster.seeds] },
      async kill(key) {
        const master = await cluster.masterOf(key);
        awaited = async () => void (await cluster.awaitPromotion(key, master));
        await cluster.killMaster(master);
      },
      promoted: () => awaited(),
      stop: () => cluster.stop(),
    };
  }
  const set = await startRedisSentinels();
  ctx.group.onClose(() => set.stop());
  let awaited: () => Promise<void> = () => Promise.reject(new Error('nothing killed'));
  return {
    redis: { mode: 'sentinel', nodes: [...set.sentinelAddresses], sentinelName: set.name },
    async kill() {
      const former = await set.killMaster();
      awaited = async () => void (await set.awaitPromotion(former));
    },
    promoted: () => awaited(),
    stop: () => set.stop(),
  };
}

/** One answer of the load process (times in ms since the epoch). */
interface Answer {
  readonly cold: boolean;
  readonly sentMs: number;
  readonly answeredMs: number;
  readonly status: number;
}

const epochMs = (): number => performance.timeOrigin + performance.now();

function parseAnswers(text: string): Answer[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [kind, sent, answered, status] = line.split(' ');
      return {
        cold: kind === 'k',
        sentMs: Number(sent),
        answeredMs: Number(answered),
        status: Number(status),
      };
    })
    .sort((a, b) => a.sentMs - b.sentMs);
}

function p99(latencies: number[]): number {
  if (latencies.length === 0) return NaN;
  const sorted = latencies.sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? NaN;
}

/** Cached answers sent within [from, to): per second, and their p99 latency. */
function windowOf(answers: readonly Answer[], from: number, to: number) {
  const within = answers.filter((a) => !a.cold && a.sentMs >= from && a.sentMs < to);
  return {
    rps: (within.length * 1000) / Math.max(1, to - from),
    p99Ms: p99(within.map((a) => a.answeredMs - a.sentMs)),
  };
}

interface FailoverFigures {
  readonly topology: Topology;
  readonly breaker: boolean;
  readonly beforeRps: number;
  readonly beforeP99Ms: number;
  readonly duringRps: number;
  readonly duringP99Ms: number;
  /** duringRps / beforeRps (target ≥ 0.5). */
  readonly ratio: number;
  readonly promotionAfterKillMs: number;
  /** From the promotion to the first 200 after the last failed answer (target ≤ 2,000). */
  readonly wholeAfterPromotionMs: number;
  /** Answers other than 200 since the kill, by status (0: no answer). */
  readonly failed: Record<string, number>;
}

/** Every answer after the kill, and what it says about the failover. */
function failoverFigures(
  answers: readonly Answer[],
  times: { beforeFromMs: number; killedMs: number; promotedMs: number },
): Omit<FailoverFigures, 'topology' | 'breaker'> {
  const { beforeFromMs, killedMs, promotedMs } = times;
  const before = windowOf(answers, beforeFromMs, killedMs);
  const during = windowOf(answers, killedMs, promotedMs);
  const failures = answers.filter((a) => a.sentMs >= killedMs && a.status !== 200);
  const failed: Record<string, number> = {};
  for (const a of failures) failed[a.status] = (failed[a.status] ?? 0) + 1;
  const last = failures.at(-1);
  const whole =
    last === undefined
      ? killedMs
      : answers.find((a) => a.sentMs > last.sentMs && a.status === 200)?.answeredMs;
  return {
    beforeRps: before.rps,
    beforeP99Ms: before.p99Ms,
    duringRps: during.rps,
    duringP99Ms: during.p99Ms,
    ratio: during.rps / before.rps,
    promotionAfterKillMs: promotedMs - killedMs,
    wholeAfterPromotionMs: whole === undefined ? NaN : whole - promotedMs,
    failed,
  };
}

async function failoverRun(
  ctx: BenchContext,
  upstream: Target,
  topology: Topology,
  breaker: boolean,
): Promise<FailoverFigures> {
  const { group, options } = ctx;
  const name = `failover-${topology}-${breaker ? 'breaker' : 'no-breaker'}`;
  ctx.onNote(`${name}: starting the ${topology === 'cluster' ? 'Cluster' : 'Sentinel set'}`);
  const started = await startTopology(ctx, topology);
  try {
    const gateway = await startGateway(group, name, {
      upstreams: { accounts: { url: `http://127.0.0.1:${upstream.port}`, engine: options.engine } },
      auth: { basic: { cache: { ttlSec: 300 } } },
      credentials: {
        store: 'redis',
        bcryptCost: options.bcryptCost,
        redis: {
          ...started.redis,
          nodes: [...started.redis.nodes],
          keyPrefix: KEY_PREFIX,
          breaker: { enabled: breaker },
        },
      },
      // Far above the load, failing open: every request runs the bucket script, and the
      // cached pair passes while Redis cannot answer (the measured case).
      rateLimits: {
        credential: { requests: 1_000_000, periodSec: 1, burst: 1_000_000 },
        onStoreError: 'open',
      },
      logging: { level: 'info', requests: false },
    });
    // startGateway writes the configuration there; the CLI makes the first pair with it.
    const made = await runCli([
      'keys',
      'create',
      '--subject',
      SUBJECT,
      '--config',
      join(group.dir, `${name}.yaml`),
      '--json',
    ]);
    if (made.code !== 0) throw new Error(`keys create exited ${String(made.code)}: ${made.stderr}`);
    const cached = JSON.parse(made.stdout) as { key: string; secret: string };
    const cachedAuthorization = basicHeader(cached.key, cached.secret);
    const cold: string[] = [];
    for (let i = 0; i < COLD_PAIRS; i += 1) {
      const answer = await httpRequest(`http://127.0.0.1:${gateway.port}/keys`, {
        method: 'POST',
        headers: { authorization: cachedAuthorization },
      });
      const pair = (JSON.parse(answer.body) as { data?: { key: string; secret: string }[] })
        .data?.[0];
      if (answer.status !== 201 || pair === undefined)
        throw new Error(`POST /keys answered ${answer.status}: ${answer.body}`);
      cold.push(basicHeader(pair.key, pair.secret));
    }

    const out = join(group.dir, `${name}.answers`);
    const load = group.start(`${name}-load`, process.execPath, [
      '--import',
      HOOK,
      LOAD,
      JSON.stringify({
        origin: `http://127.0.0.1:${gateway.port}`,
        path: '/accounts',
        out,
        connections: CONNECTIONS,
        authorization: cachedAuthorization,
        cold: { authorizations: cold, intervalMs: COLD_INTERVAL_MS },
      }),
    ]);
    await sleep(options.warmup * 1000);
    const beforeFromMs = epochMs();
    await sleep(options.duration * 1000);
    ctx.onNote(`${name}: killing the master`);
    await started.kill(redisLayout(KEY_PREFIX).key(cached.key, SUBJECT));
    const killedMs = epochMs();
    load.child.kill('SIGUSR2');
    await started.promoted();
    const promotedMs = epochMs();
    ctx.onNote(`${name}: promoted ${Math.round(promotedMs - killedMs)} ms after the kill`);
    await sleep(AFTER_PROMOTION_SEC * 1000);
    load.child.kill('SIGTERM');
    await load.exited;
    const answers = parseAnswers(readFileSync(out, 'utf8'));
    return {
      topology,
      breaker,
      ...failoverFigures(answers, { beforeFromMs, killedMs, promotedMs }),
    };
  } finally {
    await started.stop();
  }
}

export async function failoverSection(ctx: BenchContext, upstream: Target): Promise<SectionResult> {
  const runs: FailoverFigures[] = [];
  for (const topology of ['cluster', 'sentinel'] as const) {
    for (const breaker of [true, false]) {
      const figures = await failoverRun(ctx, upstream, topology, breaker);
      ctx.onNote(
        `${topology}, breaker ${breaker ? 'on' : 'off'}: ${formatNumber(figures.beforeRps, 'int')} → ${formatNumber(figures.duringRps, 'int')} req/s, whole ${formatNumber(figures.wholeAfterPromotionMs, 'int')} ms after the promotion`,
      );
      runs.push(figures);
    }
  }
  const ms = (value: number): string =>
    Number.isNaN(value) ? 'not by the end' : formatNumber(value, 'int');
  const rows = runs.map((r) => [
    `${r.topology === 'cluster' ? 'Cluster' : 'Sentinel'}, breaker ${r.breaker ? 'on' : 'off'}`,
    formatNumber(r.beforeRps, 'int'),
    formatNumber(r.beforeP99Ms, 'ms'),
    formatNumber(r.duringRps, 'int'),
    formatNumber(r.duringP99Ms, 'ms'),
    formatNumber(r.ratio, 'ratio'),
    formatNumber(r.promotionAfterKillMs, 'int'),
    ms(r.wholeAfterPromotionMs),
    Object.entries(r.failed)
      .map(([status, n]) => `${n}×${status}`)
      .join(' ') || 'none',
  ]);
  return {
    id: 'failover',
    title: `failover: the cached pair's master killed under ${CONNECTIONS} keep-alive clients (rate limit failing open)`,
    rows: [],
    notes: [
      table(
        [
          'run',
          'req/s before',
          'p99 before',
          'req/s during',
          'p99 during',
          'during/before',
          'promotion ms',
          'whole ms after',
          'not 200 since the kill',
        ],
        rows,
      ),
      `"during": cached requests sent from the kill to the promotion; targets: during/before ≥ 0.5, p99 during < 50 ms, whole again ≤ 2,000 ms after the promotion (the first 200 after the last answer other than 200; cold pairs answer 503 until Redis does). cluster-node-timeout ${CLUSTER_NODE_TIMEOUT_MS} ms, sentinel down-after ${SENTINEL_DOWN_AFTER_MS} ms; a 401 would be a valid pair refused.`,
    ],
    extra: { runs },
  };
}

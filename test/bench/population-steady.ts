// The population section's steady state, where issue 25's targets are read: per engine, the
// one-pair and the largest group's records-on gateways loaded at once, each by its own wrk,
// first for one process-cache TTL (so every cached pair was verified under this load, none
// left from the rounds), then for the measured runs. Loaded at once, the two share the
// machine's drift second by second, and each run's ratio pairs figures of the same seconds.
import { median } from '../support/median.js';
import { errorCount, measure, type WrkSpec } from './measure.js';
import {
  countersBetween,
  readCounters,
  type GatewayCounters,
  type MeteredGateway,
} from './population-gateways.js';
import { pairsText, perRequestText, type Targets } from './population-report.js';
import type { Population } from './population-seed.js';
import { formatNumber, table } from './report.js';
import type { BenchContext } from './scenarios.js';

/** auth.basic.cache.ttlSec by default: after this long under load the cache is in equilibrium. */
export const STEADY_WARMUP_SEC = 60;

export interface SteadyGateway {
  readonly gateway: MeteredGateway;
  readonly population: Population;
}

export interface SteadyPairing {
  readonly engine: string;
  /** The one-pair gateway (the smallest group's). */
  readonly base: SteadyGateway;
  /** The largest group's. */
  readonly large: SteadyGateway;
}

export interface SteadySide {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMicrosPerRequest: number;
  readonly requests: number;
  readonly errors: number;
  readonly counters: GatewayCounters;
}

export interface SteadyRun {
  readonly base: SteadySide;
  readonly large: SteadySide;
}

export interface SteadyFigures {
  readonly engine: string;
  readonly baseSize: number;
  readonly largeSize: number;
  readonly runs: readonly SteadyRun[];
}

export interface SteadyLoad {
  readonly connections: number;
  readonly seconds: number;
  readonly exponent: number;
  /** The first run's seed; each run takes the next, the same for both gateways. */
  readonly seed: number;
}

function spec(side: SteadyGateway, load: SteadyLoad, seconds: number, seed: number): WrkSpec {
  return {
    url: side.gateway.target.url,
    connections: load.connections,
    seconds,
    zipf: { file: side.population.headersFile, exponent: load.exponent, seed },
  };
}

async function measureSide(
  ctx: BenchContext,
  side: SteadyGateway,
  load: SteadyLoad,
  seed: number,
): Promise<SteadySide> {
  const before = await readCounters(side.gateway);
  const m = await measure(
    ctx.group,
    side.gateway.target.started.pid,
    [spec(side, load, load.seconds, seed)],
    ctx.scripts,
  );
  const counters = countersBetween(before, await readCounters(side.gateway));
  const [wrk] = m.wrk;
  if (wrk === undefined) throw new Error(`${side.gateway.target.name}: no wrk report`);
  return {
    rps: wrk.rps,
    p50Ms: wrk.p50Ms,
    p99Ms: wrk.p99Ms,
    cpuMicrosPerRequest: wrk.requests > 0 ? (m.cpuSeconds / wrk.requests) * 1e6 : NaN,
    requests: wrk.requests,
    errors: wrk.failure === undefined ? errorCount(wrk) : Math.max(1, errorCount(wrk)),
    counters,
  };
}

/** The warm-up, then `runs` measured runs, both gateways loaded at once throughout. */
export async function steadyRuns(
  ctx: BenchContext,
  pairing: SteadyPairing,
  load: SteadyLoad,
  runs: number,
): Promise<SteadyFigures> {
  const { base, large } = pairing;
  ctx.onNote(`population: steady state, ${pairing.engine}: ${STEADY_WARMUP_SEC} s of load first`);
  await Promise.all(
    [base, large].map((side) =>
      measure(
        ctx.group,
        side.gateway.target.started.pid,
        [spec(side, load, STEADY_WARMUP_SEC, load.seed)],
        ctx.scripts,
      ),
    ),
  );
  const measured: SteadyRun[] = [];
  for (let run = 0; run < runs; run += 1) {
    const seed = load.seed + 1 + run;
    const [b, l] = await Promise.all([
      measureSide(ctx, base, load, seed),
      measureSide(ctx, large, load, seed),
    ]);
    measured.push({ base: b, large: l });
  }
  return {
    engine: pairing.engine,
    baseSize: base.population.size,
    largeSize: large.population.size,
    runs: measured,
  };
}

const checksOf = (c: GatewayCounters): number =>
  Object.values(c.recordChecks).reduce((a, b) => a + b, 0);

/** Medians over the runs without errors, and the per-run ratios' medians. */
export function steadySummary(figures: SteadyFigures) {
  const valid = figures.runs.filter((r) => r.base.errors === 0 && r.large.errors === 0);
  const of = (pick: (r: SteadyRun) => number): number => median(valid.map(pick));
  const sum = (pick: (r: SteadyRun) => number): number =>
    figures.runs.reduce((total, r) => total + pick(r), 0);
  const largeRequests = sum((r) => r.large.requests);
  return {
    validRuns: valid.length,
    runs: figures.runs.length,
    baseRps: of((r) => r.base.rps),
    largeRps: of((r) => r.large.rps),
    baseP99Ms: of((r) => r.base.p99Ms),
    largeP99Ms: of((r) => r.large.p99Ms),
    baseCpu: of((r) => r.base.cpuMicrosPerRequest),
    largeCpu: of((r) => r.large.cpuMicrosPerRequest),
    rpsRatio: of((r) => r.large.rps / r.base.rps),
    p99Ratio: of((r) => r.large.p99Ms / r.base.p99Ms),
    recordChecksPerRequest:
      largeRequests > 0 ? sum((r) => checksOf(r.large.counters)) / largeRequests : NaN,
    bcryptPerRequest:
      largeRequests > 0 ? sum((r) => r.large.counters.bcryptCompares) / largeRequests : NaN,
    errors: sum((r) => r.base.errors + r.large.errors),
    baseFailedAnswers: failedOver(figures.runs.map((r) => r.base.counters)),
    largeFailedAnswers: failedOver(figures.runs.map((r) => r.large.counters)),
  };
}

/** The answers other than 2xx of `counters`, summed. */
function failedOver(counters: readonly GatewayCounters[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const c of counters)
    for (const [name, count] of Object.entries(c.failedAnswers))
      total[name] = (total[name] ?? 0) + count;
  return total;
}

/** `51 × 503 gateway, 2 × 502 gateway`, or `none`. */
function failedText(failed: Readonly<Record<string, number>>): string {
  const entries = Object.entries(failed).sort(([, a], [, b]) => b - a);
  return entries.length === 0
    ? 'none'
    : entries.map(([name, count]) => `${formatNumber(count, 'int')} × ${name}`).join(', ');
}

type SteadySummary = ReturnType<typeof steadySummary>;

export interface SteadyVerdict {
  readonly rps: boolean;
  readonly p99: boolean;
  readonly bcrypt: boolean;
}

export function steadyVerdict(s: SteadySummary, targets: Targets): SteadyVerdict {
  return {
    rps: s.rpsRatio >= targets.rpsAtLeast,
    p99: s.p99Ratio <= targets.p99AtMost,
    bcrypt: s.bcryptPerRequest <= targets.bcryptPerRequestAtMost,
  };
}

const verdictText = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');
const times = (value: number): string => formatNumber(value, 'ratio');

/** The steady-state table, the targets' verdicts and what they mean. */
export function steadyNotes(
  all: readonly SteadyFigures[],
  targets: Targets,
  load: Pick<SteadyLoad, 'connections' | 'seconds'>,
): string[] {
  const first = all[0];
  if (first === undefined) return [];
  const base = pairsText(first.baseSize);
  const large = pairsText(first.largeSize);
  const summaries = all.map((f) => ({ engine: f.engine, s: steadySummary(f) }));
  const rows = summaries.map(({ engine, s }) => {
    return [
      engine,
      formatNumber(s.baseRps, 'int'),
      formatNumber(s.largeRps, 'int'),
      times(s.rpsRatio),
      formatNumber(s.baseP99Ms, 'ms'),
      formatNumber(s.largeP99Ms, 'ms'),
      times(s.p99Ratio),
      `${formatNumber(s.baseCpu, 'int')} / ${formatNumber(s.largeCpu, 'int')}`,
      perRequestText(s.recordChecksPerRequest),
      perRequestText(s.bcryptPerRequest),
      String(s.errors),
      `${s.validRuns}/${s.runs}`,
    ];
  });
  const verdicts = summaries.map(({ engine, s }) => {
    const pass = steadyVerdict(s, targets);
    return `target, ${large} with records, ${engine}, steady state: req/s × ${times(s.rpsRatio)} of the ${base} row (≥ ${targets.rpsAtLeast}) ${verdictText(pass.rps)}; p99 × ${times(s.p99Ratio)} (≤ ${targets.p99AtMost}) ${verdictText(pass.p99)}; bcrypt runs per request ${perRequestText(s.bcryptPerRequest)} (≤ ${targets.bcryptPerRequestAtMost}) ${verdictText(pass.bcrypt)}`;
  });
  // What the errors a wrk counted were, by the gateways' own count: an error the gateways did
  // not answer (none listed) was a timeout or a cut connection.
  const errorNotes = summaries
    .filter(({ s }) => s.errors > 0)
    .map(
      ({ engine, s }) =>
        `errors, ${engine}: ${formatNumber(s.errors, 'int')} counted by wrk; the gateways' own answers other than 2xx in those runs (status, and who gave it: the gateway or the upstream): ${base} ${failedText(s.baseFailedAnswers)}; ${large} ${failedText(s.largeFailedAnswers)}`,
    );
  return [
    `steady state, records on: the ${base} and ${large} gateways of each engine loaded at once (${load.connections} connections each, a wrk each), ${STEADY_WARMUP_SEC} s (the cache's TTL) before ${first.runs.length} measured runs of ${load.seconds} s:`,
    table(
      [
        'engine',
        `${base} req/s`,
        `${large} req/s`,
        'req/s ×',
        `${base} p99`,
        `${large} p99`,
        'p99 ×',
        'CPU µs/req',
        'records/req',
        'bcrypt/req',
        'errors',
        'runs ok',
      ],
      rows,
    ),
    `steady state: each run's ratio pairs the two gateways' figures over the same seconds (the median of the runs' ratios is given); records/req: the ${large} gateway's process-cache misses per request, each one HGETALL and one HMAC (a pair's cache entry lives ${STEADY_WARMUP_SEC} s from its check, so a pair drawn less often than that misses at each draw). The table above measures each row in turn, a few seconds of load at a time: further from the steady state, its 100,000-pair rows miss more.`,
    ...errorNotes,
    ...verdicts,
  ];
}

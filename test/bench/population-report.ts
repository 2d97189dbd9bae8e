// The population section's figures beyond its table: ratios to the smallest group's rows (the
// one-pair row by default), the factor over Caddy, the record checks and Zipf's shares (issue
// 25's targets are read in the steady state, population-steady.ts). Pure: it reads the rows
// and the counters the section gathered.
import type { Engine } from './options.js';
import { formatNumber, ratio, summarize, table } from './report.js';
import type { Row } from './scenarios.js';
import type { GatewayCounters, RecordCheckResult } from './population-gateways.js';
import { zipfTopShare } from './zipf.js';

/** One row's gateway (or Caddy) and, per measured run, its counters' deltas. */
export interface RowInfo {
  readonly size: number;
  readonly kind: Engine | 'caddy';
  readonly records?: boolean;
  readonly runs: { round: number; requests: number; counters: GatewayCounters }[];
}

export interface Targets {
  readonly rpsAtLeast: number;
  readonly p99AtMost: number;
  readonly bcryptPerRequestAtMost: number;
}

export interface ReportInput {
  readonly rows: readonly Row[];
  readonly infos: ReadonlyMap<string, RowInfo>;
  readonly sizes: readonly number[];
  readonly exponent: number;
  /** The process cache's bound and Caddy's, for the note on Zipf's shares. */
  readonly cacheEntries: number;
  readonly caddyCacheEntries: number;
  /** Distinct (secret, hash) entries the pairs share. */
  readonly poolEntries: number;
}

export const pairsText = (n: number): string =>
  `${n.toLocaleString('en-US')} pair${n === 1 ? '' : 's'}`;

const total = (info: RowInfo, pick: (run: RowInfo['runs'][number]) => number): number =>
  info.runs.reduce((sum, run) => sum + pick(run), 0);

/** A counter's runs over the requests answered, summed over the measured runs; NaN for Caddy. */
function perRequest(info: RowInfo | undefined, pick: (c: GatewayCounters) => number): number {
  if (info === undefined || info.kind === 'caddy') return NaN;
  const requests = total(info, (run) => run.requests);
  return requests > 0 ? total(info, (run) => pick(run.counters)) / requests : NaN;
}

export const bcryptPerRequest = (info: RowInfo | undefined): number =>
  perRequest(info, (c) => c.bcryptCompares);

/** Record checks per request: the process cache's misses on a records-on gateway. */
export const recordChecksPerRequest = (info: RowInfo | undefined): number =>
  info?.records === true
    ? perRequest(info, (c) => Object.values(c.recordChecks).reduce((a, b) => a + b, 0))
    : NaN;

export function perRequestText(value: number): string {
  if (Number.isNaN(value)) return '—';
  return value === 0 ? '0' : value < 0.01 ? value.toPrecision(2) : value.toFixed(3);
}

const times = (value: number): string => formatNumber(value, 'ratio');

/**
 * a's median over b's, for rows of two groups: the groups are measured one after the other
 * (population.ts), so their rounds are not side by side and per-round ratios pair nothing.
 */
function medianRatio(a: Row, b: Row, metric: 'rps' | 'p99Ms' | 'cpuMicrosPerRequest'): number {
  return summarize(a)[metric] / summarize(b)[metric];
}

export function reportNotes(input: ReportInput): {
  notes: string[];
  extra: Record<string, unknown>;
} {
  const { rows, infos, sizes } = input;
  const smallest = sizes[0] ?? 1;
  const largest = sizes.at(-1) ?? 1;
  const find = (size: number, kind: RowInfo['kind'], records?: boolean): Row | undefined =>
    rows.find((r) => {
      const info = infos.get(r.id);
      return info?.size === size && info.kind === kind && info.records === records;
    });
  const notes: string[] = [];

  const ratios: Record<string, Record<string, number>> = {};
  const ratioRows: string[][] = [];
  for (const r of rows) {
    const info = infos.get(r.id);
    const base = info === undefined ? undefined : find(smallest, info.kind, info.records);
    if (info === undefined || info.size === smallest || base === undefined) continue;
    const values = {
      rps: medianRatio(r, base, 'rps'),
      p99: medianRatio(r, base, 'p99Ms'),
      cpu: medianRatio(r, base, 'cpuMicrosPerRequest'),
    };
    ratios[r.id] = values;
    ratioRows.push([r.label, times(values.rps), times(values.p99), times(values.cpu)]);
  }
  if (ratioRows.length > 0)
    notes.push(
      `ratios to the ${pairsText(smallest)} row of the same proxy and mode (a median over the other; the groups are measured one after the other, minutes apart):`,
      table(['row', 'req/s ×', 'p99 ×', 'CPU µs/req ×'], ratioRows),
    );

  const factorSizes = sizes.filter((n) => n >= 10_000);
  const caddyFactors: Record<string, Record<string, number>> = {};
  const factorRows: string[][] = [];
  for (const size of factorSizes.length > 0 ? factorSizes : [largest]) {
    const caddy = find(size, 'caddy');
    if (caddy === undefined) continue;
    for (const r of rows) {
      const info = infos.get(r.id);
      if (info?.size !== size || info.kind === 'caddy') continue;
      const values = {
        rps: ratio(r, caddy, 'rps'),
        perCpuSecond: ratio(caddy, r, 'cpuMicrosPerRequest'),
      };
      caddyFactors[r.id] = values;
      factorRows.push([r.label, times(values.rps), times(values.perCpuSecond)]);
    }
  }
  if (factorRows.length > 0)
    notes.push(
      "the factor over Caddy basicauth with the same accounts (median of per-round ratios; requests per CPU-second: Caddy's CPU µs/req ÷ the gateway's):",
      table(['row', 'req/s ÷ Caddy', 'requests per CPU-s ÷ Caddy'], factorRows),
    );

  const others: Partial<Record<RecordCheckResult, number>> = {};
  for (const info of infos.values())
    for (const run of info.runs)
      for (const [result, n] of Object.entries(run.counters.recordChecks) as [
        RecordCheckResult,
        number,
      ][])
        if (result !== 'hit' && n > 0) others[result] = (others[result] ?? 0) + n;
  const othersText = Object.entries(others)
    .map(([result, n]) => `${result} ${n.toLocaleString('en-US')}`)
    .join(', ');
  notes.push(
    `records/req: verified-record checks per request on a records-on gateway (gateway_verified_record_checks_total), i.e. its process cache's misses, each one HGETALL and one HMAC; checks other than hit in the measured runs: ${othersText === '' ? 'none' : othersText}. bcrypt/req: gateway_bcrypt_compares_total over the measured runs' requests (Caddy has no such counter: —)`,
  );

  const shares = sizes
    .filter((n) => n > input.caddyCacheEntries)
    .map(
      (n) =>
        `${n.toLocaleString('en-US')}: ${formatNumber(100 * zipfTopShare(n, input.exponent, input.cacheEntries), 'pct')} / ${formatNumber(100 * zipfTopShare(n, input.exponent, input.caddyCacheEntries), 'pct')}`,
    );
  if (shares.length > 0)
    notes.push(
      `Zipf s = ${input.exponent}: the share of requests the ${input.cacheEntries.toLocaleString('en-US')} / ${input.caddyCacheEntries.toLocaleString('en-US')} hottest pairs draw (the gateway's default auth.basic.cache.maxEntries, TTL 60 s / Caddy's hash_cache) at ${shares.join('; ')}`,
    );
  notes.push(
    `Caddy: GOMAXPROCS unset (all cores, for its bcrypt), its Caddyfile form's hash_cache (${input.caddyCacheEntries.toLocaleString('en-US')} results, keyed by hash + password, random eviction). Pairs sharing one of the ${input.poolEntries.toLocaleString('en-US')} (secret, hash) entries share its results, so it meets at most that many keys where N distinct secrets would give it N: a favour to Caddy, the factor over it is conservative. For the gateway the sharing is neutral: its cache is keyed by the whole key:secret, its records by key id.`,
  );

  return {
    notes,
    extra: { ratios, caddyFactors, recordChecksOtherThanHit: others },
  };
}

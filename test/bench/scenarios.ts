// The sections of the bench. Each is a set of rows (one configuration each) measured in
// interleaved rounds: every row once per round, in an order that rotates from round to round,
// so that the machine's drift falls on all of them alike; medians are reported.
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcrypt';
import {
  errorCount,
  measure,
  runWrk,
  type PairCycle,
  type Scripts,
  type WrkResult,
  type WrkSpec,
} from './measure.js';
import type { BenchOptions, Section } from './options.js';
import type { ProcessGroup } from './processes.js';
import type { Target } from './targets.js';

export interface Run {
  readonly round: number;
  /** The reported load (for the mixed section: the cached clients). */
  readonly wrk: WrkResult;
  /** Load run beside it and not reported as the row (the mixed section's wrong secrets). */
  readonly companion?: WrkResult;
  /** The proxy tree's CPU time over every request answered during the run (both loads). */
  readonly cpuMicrosPerRequest: number;
  readonly rssPeakMiB: number;
  /** Processes in the measured tree. */
  readonly processes: number;
  /** Errors of the reported load: non-2xx plus socket errors. */
  readonly errors: number;
  /** No errors and a wrk report: only these runs make the medians and ratios. */
  readonly valid: boolean;
}

export interface Row {
  readonly id: string;
  readonly label: string;
  readonly target: Target;
  /** Ratios: the row of this section it is compared with (its bare engine). */
  readonly bare?: string;
  /** Load this row gets in one run (read again before every run). */
  readonly spec: () => WrkSpec;
  readonly companion?: () => WrkSpec;
  /** Loads pairs that must not have been verified before: no warm-up. */
  readonly cold?: boolean;
  /** Called just before each measured run (the fleet section samples Redis here). */
  readonly beforeRun?: () => Promise<void>;
  readonly afterRun?: (run: Run) => void | Promise<void>;
  readonly runs: Run[];
}

export interface SectionResult {
  readonly id: Section;
  readonly title: string;
  readonly rows: Row[];
  /** Lines printed under the section's table. */
  readonly notes: string[];
  /** Figures the section computes beyond its rows (also in the JSON). */
  readonly extra: Record<string, unknown>;
  /** Columns of the section's own after the usual ones (the population's bcrypt runs). */
  readonly columns?: readonly Column[];
  /** Why the section was not measured. */
  readonly skipped?: string;
}

/** A column of a section's table beyond the usual ones: its header and each row's cell. */
export interface Column {
  readonly header: string;
  readonly cell: (row: Row) => string;
}

export interface BenchContext {
  readonly group: ProcessGroup;
  readonly options: BenchOptions;
  readonly scripts: Scripts;
  /** One line per measurement (stderr). */
  readonly onRun: (section: string, row: Row, run: Run, rounds: number) => void;
  readonly onNote: (text: string) => void;
}

export function row(fields: Omit<Row, 'runs'>): Row {
  return { ...fields, runs: [] };
}

export function skippedSection(id: Section, title: string, reason: string): SectionResult {
  return { id, title, rows: [], notes: [], extra: {}, skipped: reason };
}

/** Unmeasured load on every warm row (JIT, pools, the first request's bcrypt), then the rounds. */
export async function runRounds(ctx: BenchContext, title: string, rows: Row[]): Promise<void> {
  const { options } = ctx;
  if (options.warmup > 0) {
    for (const r of rows.filter((r) => r.cold !== true)) {
      ctx.onNote(`warm-up: ${r.label}`);
      const specs = [r.spec(), ...(r.companion === undefined ? [] : [r.companion()])];
      await Promise.all(
        specs.map((spec) => runWrk(ctx.group, { ...spec, seconds: options.warmup }, ctx.scripts)),
      );
    }
  }
  for (let round = 0; round < options.rounds; round += 1) {
    for (let i = 0; i < rows.length; i += 1) {
      const r = rows[(i + round) % rows.length];
      if (r === undefined) continue;
      const specs = [r.spec(), ...(r.companion === undefined ? [] : [r.companion()])];
      await r.beforeRun?.();
      const m = await measure(ctx.group, r.target.started.pid, specs, ctx.scripts);
      const [primary, companion] = m.wrk;
      if (primary === undefined) continue;
      const requests = m.wrk.reduce((sum, w) => sum + w.requests, 0);
      const errors = errorCount(primary);
      const run: Run = {
        round: round + 1,
        wrk: primary,
        ...(companion === undefined ? {} : { companion }),
        cpuMicrosPerRequest: requests > 0 ? (m.cpuSeconds / requests) * 1e6 : NaN,
        rssPeakMiB: m.rssPeakMiB,
        processes: m.processes,
        errors,
        valid: primary.failure === undefined && errors === 0 && primary.requests > 0,
      };
      r.runs.push(run);
      await r.afterRun?.(run);
      ctx.onRun(title, r, run, options.rounds);
      // Let sockets and timers settle between two loads.
      await sleep(300);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Pairs: every seeded pair has a key `prefix + zero-padded index` (27 characters, like the
// gateway's ak_ + 24) and, within a set, the same secret, hence one bcrypt hash for all:
// seeding costs one bcrypt run, while every check of a new pair still pays a full compare,
// because the cache is keyed by the whole pair.

export const COLD_SET = { prefix: 'ak_bench_', digits: 18 } as const;

export function cycle(
  count: number,
  start: number,
  secret: string,
  set: { prefix: string; digits: number } = COLD_SET,
): PairCycle {
  return { prefix: set.prefix, digits: set.digits, count, start, secret };
}

/**
 * A row loading a new pair on every request, cycling through `count` pairs from where its
 * previous run stopped (plus the connections' requests still in flight then), so no run
 * meets a pair an earlier one had verified until the whole set has been used.
 */
export function coldRow(
  fields: { id: string; label: string; target: Target; url?: string },
  options: { count: number; secret: string; connections: number; seconds: number },
): Row {
  let next = 0;
  return row({
    ...fields,
    cold: true,
    spec: () => ({
      url: fields.url ?? fields.target.url,
      connections: options.connections,
      seconds: options.seconds,
      pairs: cycle(options.count, next, options.secret),
    }),
    afterRun: (run) => {
      next = (next + run.wrk.requests + options.connections) % options.count;
    },
  });
}

export interface BcryptLimit {
  readonly cost: number;
  readonly cores: number;
  /** Median time of one compare (ms), measured here with the bcrypt package. */
  readonly compareMs: number;
  /** cores / compare time: checks per second this machine can do at most. */
  readonly perSecond: number;
}

/** The machine's bcrypt limit at `cost`: cores × 1 / one compare (median of several, sync). */
export async function bcryptLimit(cost: number): Promise<BcryptLimit> {
  const hash = await bcrypt.hash('bench-limit-secret', cost);
  bcrypt.compareSync('bench-limit-secret', hash);
  const times: number[] = [];
  const deadline = performance.now() + 1500;
  while (times.length < 5 || (performance.now() < deadline && times.length < 200)) {
    const start = performance.now();
    bcrypt.compareSync('bench-limit-secret', hash);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const compareMs = times[Math.floor(times.length / 2)] ?? NaN;
  const cores = availableParallelism();
  return { cost, cores, compareMs, perSecond: (cores * 1000) / compareMs };
}

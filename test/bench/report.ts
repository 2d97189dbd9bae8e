// Medians, ratios, the text table and the JSON document.
import { median } from '../support/median.js';
import type { Row, Run, SectionResult } from './scenarios.js';

export interface RowSummary {
  readonly runs: number;
  /** Runs without errors: the only ones in the medians. */
  readonly validRuns: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMicrosPerRequest: number;
  readonly rssPeakMiB: number;
  /** Errors of every run (non-2xx + socket errors), excluded runs included. */
  readonly errors: number;
}

export function summarize(r: Row): RowSummary {
  const valid = r.runs.filter((run) => run.valid);
  const of = (pick: (run: Run) => number): number => median(valid.map(pick));
  return {
    runs: r.runs.length,
    validRuns: valid.length,
    rps: of((run) => run.wrk.rps),
    p50Ms: of((run) => run.wrk.p50Ms),
    p99Ms: of((run) => run.wrk.p99Ms),
    cpuMicrosPerRequest: of((run) => run.cpuMicrosPerRequest),
    rssPeakMiB: of((run) => run.rssPeakMiB),
    errors: r.runs.reduce((sum, run) => sum + run.errors, 0),
  };
}

export type Metric = 'rps' | 'p99Ms' | 'cpuMicrosPerRequest' | 'rssPeakMiB';

const pickMetric = (run: Run, metric: Metric): number =>
  metric === 'rps'
    ? run.wrk.rps
    : metric === 'p99Ms'
      ? run.wrk.p99Ms
      : metric === 'cpuMicrosPerRequest'
        ? run.cpuMicrosPerRequest
        : run.rssPeakMiB;

/**
 * a / b for one metric: the median of the per-round ratios, over the rounds in which both
 * rows have a valid run (they were measured side by side, minutes apart at most). NaN when
 * no round has both.
 */
export const ratio = (a: Row, b: Row, metric: Metric): number =>
  perRound(a, b, metric, (x, y) => x / y);

/** a − b for one metric: the median of the per-round differences (as ratio() pairs them). */
export const difference = (a: Row, b: Row, metric: Metric): number =>
  perRound(a, b, metric, (x, y) => x - y);

function perRound(
  a: Row,
  b: Row,
  metric: Metric,
  combine: (x: number, y: number) => number,
): number {
  return median(perRoundValues(a, b, metric, combine));
}

/** Requests per CPU-second of `b` over `a`'s (CPU per request a / b), round by round. */
export const perRoundRatios = (a: Row, b: Row): number[] =>
  perRoundValues(a, b, 'cpuMicrosPerRequest', (x, y) => x / y);

function perRoundValues(
  a: Row,
  b: Row,
  metric: Metric,
  combine: (x: number, y: number) => number,
): number[] {
  const values: number[] = [];
  for (const runA of a.runs) {
    const runB = b.runs.find((run) => run.round === runA.round);
    if (runB === undefined || !runA.valid || !runB.valid) continue;
    values.push(combine(pickMetric(runA, metric), pickMetric(runB, metric)));
  }
  return values;
}

/** The value at percentile `p` (0-100) of ascending `sorted`: the nearest rank at or below. */
export const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export function formatNumber(value: number, kind: 'int' | 'ms' | 'ratio' | 'pct'): string {
  if (!Number.isFinite(value)) return 'n/a';
  switch (kind) {
    case 'int':
      return Math.round(value).toLocaleString('en-US');
    case 'ms':
      return value < 10 ? value.toFixed(2) : value.toFixed(1);
    case 'ratio':
      return value.toFixed(2);
    case 'pct':
      return `${value < 10 ? value.toFixed(1) : value.toFixed(0)}%`;
  }
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const ROW_HEADER = [
  'configuration',
  'req/s',
  'p50 ms',
  'p99 ms',
  'CPU µs/req',
  'RSS MiB',
  'errors',
  'runs ok',
];

export function rowCells(r: Row): string[] {
  const s = summarize(r);
  return [
    r.label,
    formatNumber(s.rps, 'int'),
    formatNumber(s.p50Ms, 'ms'),
    formatNumber(s.p99Ms, 'ms'),
    formatNumber(s.cpuMicrosPerRequest, 'int'),
    formatNumber(s.rssPeakMiB, 'int'),
    // A run with errors is not a result: marked, and left out of medians and ratios.
    s.errors === 0 ? '0' : `${s.errors.toLocaleString('en-US')} !`,
    `${s.validRuns}/${s.runs}`,
  ];
}

export function sectionText(section: SectionResult): string {
  const lines = [`== ${section.title} ==`];
  if (section.skipped !== undefined) {
    lines.push(`skipped: ${section.skipped}`);
    return lines.join('\n');
  }
  const columns = section.columns ?? [];
  if (section.rows.length > 0)
    lines.push(
      table(
        [...ROW_HEADER, ...columns.map((c) => c.header)],
        section.rows.map((r) => [...rowCells(r), ...columns.map((c) => c.cell(r))]),
      ),
    );
  lines.push(...section.notes);
  return lines.join('\n');
}

export function rowJson(r: Row): Record<string, unknown> {
  return {
    id: r.id,
    label: r.label,
    ...(r.bare === undefined ? {} : { bare: r.bare }),
    summary: summarize(r),
    runs: r.runs,
  };
}

export function sectionJson(section: SectionResult): Record<string, unknown> {
  return {
    id: section.id,
    title: section.title,
    ...(section.skipped === undefined ? {} : { skipped: section.skipped }),
    rows: section.rows.map(rowJson),
    notes: section.notes,
    ...section.extra,
  };
}

// The rate-limit sections' arithmetic (issue 28), kept pure: the accuracy section's windows
// over recorded answers, Redis script calls per checked request, and the targets' verdicts.
// accuracy.ts, scenarios.ts (limits) and fleet.ts do the measuring;
// test/unit/bench/rate-limit-figures.test.ts checks these.

/** One answer the skew load recorded (servers/skew-load.ts). */
export interface SkewAnswer {
  /** 0: gateway A, 1: gateway B. */
  readonly side: number;
  readonly sentMs: number;
  readonly answeredMs: number;
  /** 0: no answer. */
  readonly status: number;
}

/** The answers file: `side sentMs answeredMs status` per line. */
export function parseSkewAnswers(text: string): SkewAnswer[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [side, sent, answered, status] = line.split(' ').map(Number);
      return {
        side: side ?? -1,
        sentMs: sent ?? NaN,
        answeredMs: answered ?? NaN,
        status: status ?? 0,
      };
    });
}

/** A request the limiter decided: admitted (200) or refused (429). */
export const isChecked = (a: SkewAnswer): boolean => a.status === 200 || a.status === 429;

/** One window of the accuracy run: what passed in it against what the policy allows. */
export interface AdmittedWindow {
  readonly fromMs: number;
  readonly toMs: number;
  /** 200s answered in the window. */
  readonly admitted: number;
  /** 429s answered in the window. */
  readonly refused: number;
  /** The policy's rate over the window: requests / periodSec × its seconds. */
  readonly allowed: number;
  /** (admitted − allowed) / allowed, in %. */
  readonly errorPct: number;
  /**
   * Slices of the window (`sliceMs` each) in which fewer requests were answered (200s +
   * 429s) than the policy allows in a slice: the load, not the limiter, set the pace then.
   */
  readonly thinSlices: number;
}

/**
 * `count` consecutive windows of `windowMs` from `fromMs`, each counting the answers by the
 * time they were answered (a request admitted is one the client got a 200 for), against
 * `ratePerSec` × the window's seconds. The caller starts them after the initial burst has
 * been spent, so a window under steady over-demand should hold the rate alone. Each window
 * is cut in slices of `sliceMs` (a divisor of `windowMs`) to tell where the load was thin.
 */
export function admittedWindows(
  answers: readonly SkewAnswer[],
  fromMs: number,
  windowMs: number,
  count: number,
  ratePerSec: number,
  sliceMs: number,
): AdmittedWindow[] {
  const perWindow = Math.max(1, Math.round(windowMs / sliceMs));
  const admitted = new Array<number>(count * perWindow).fill(0);
  const asked = new Array<number>(count * perWindow).fill(0);
  for (const a of answers) {
    if (!isChecked(a)) continue;
    const slice = Math.floor(((a.answeredMs - fromMs) * perWindow) / windowMs);
    if (slice < 0 || slice >= count * perWindow) continue;
    asked[slice] = (asked[slice] ?? 0) + 1;
    if (a.status === 200) admitted[slice] = (admitted[slice] ?? 0) + 1;
  }
  const allowed = (ratePerSec * windowMs) / 1000;
  const sum = (values: readonly number[]): number => values.reduce((n, v) => n + v, 0);
  return Array.from({ length: count }, (_, i) => {
    const slices = (values: readonly number[]): number[] =>
      values.slice(i * perWindow, (i + 1) * perWindow);
    const n = sum(slices(admitted));
    return {
      fromMs: fromMs + i * windowMs,
      toMs: fromMs + (i + 1) * windowMs,
      admitted: n,
      refused: sum(slices(asked)) - n,
      allowed,
      errorPct: ((n - allowed) / allowed) * 100,
      thinSlices: slices(asked).filter((x) => x < allowed / perWindow).length,
    };
  });
}

/**
 * A window the load, not the limiter, kept under the policy: fewer admitted than allowed,
 * and a slice of it in which the load asked for less than the policy's rate (a stall of the
 * client, or of the gateways on these shared cores). A bucket nobody asks fills up to its
 * burst and no further: what a gap longer than the burst's time did not ask for is never
 * admitted later, however hard the load asks on average. A limiter that admits too little
 * refuses all along, every slice full, and is judged; over the policy is always judged.
 */
export function loadBound(w: AdmittedWindow): boolean {
  return w.admitted < w.allowed && w.thinSlices > 0;
}

/** The error farthest from 0 (its sign kept); NaN for no window. */
export function worstError(windows: readonly Pick<AdmittedWindow, 'errorPct'>[]): number {
  let worst = NaN;
  for (const w of windows)
    if (Number.isNaN(worst) || Math.abs(w.errorPct) > Math.abs(worst)) worst = w.errorPct;
  return worst;
}

/** Every window within ±`tolerancePct` (none: not met). */
export function withinTolerance(
  windows: readonly Pick<AdmittedWindow, 'errorPct'>[],
  tolerancePct: number,
): boolean {
  return windows.length > 0 && windows.every((w) => Math.abs(w.errorPct) <= tolerancePct);
}

/**
 * Script runs (EVALSHA + EVAL) per request the limiter decided, answered at or after
 * `fromMs`: what a rate-limited request costs Redis. NaN when none was decided.
 */
export function callsPerCheckedRequest(
  scriptCalls: number,
  answers: readonly SkewAnswer[],
  fromMs: number,
): number {
  const checked = answers.filter((a) => a.answeredMs >= fromMs && isChecked(a)).length;
  return checked === 0 ? NaN : scriptCalls / checked;
}

/**
 * How the load split between the sides, answers sent in [fromMs, toMs): side A's share of
 * them in % (NaN for none).
 */
export function sideAShare(answers: readonly SkewAnswer[], fromMs: number, toMs: number): number {
  let a = 0;
  let all = 0;
  for (const answer of answers) {
    if (answer.sentMs < fromMs || answer.sentMs >= toMs) continue;
    all += 1;
    if (answer.side === 0) a += 1;
  }
  return all === 0 ? NaN : (a / all) * 100;
}

/** What the accuracy target makes of a mode's windows. */
export interface AccuracyVerdict {
  /** Windows the limiter bound (not loadBound): the ones judged. */
  readonly judged: number;
  readonly loadBound: number;
  /** The worst error of the judged windows (NaN: none judged). */
  readonly worstPct: number;
  /** Every judged window within the tolerance; undefined when none could be judged. */
  readonly met: boolean | undefined;
}

export function accuracyVerdict(
  windows: readonly AdmittedWindow[],
  tolerancePct: number,
): AccuracyVerdict {
  const judged = windows.filter((w) => !loadBound(w));
  return {
    judged: judged.length,
    loadBound: windows.length - judged.length,
    worstPct: worstError(judged),
    met: judged.length === 0 ? undefined : withinTolerance(judged, tolerancePct),
  };
}

/** `PASS` when `met`, `FAIL` when not, `n/a` when nothing could be judged: the target lines. */
export const verdict = (met: boolean | undefined): 'PASS' | 'FAIL' | 'n/a' =>
  met === undefined ? 'n/a' : met ? 'PASS' : 'FAIL';

/** A figure at least `min` (a NaN figure, nothing measured, is not). */
export const atLeast = (value: number, min: number): boolean => value >= min;

/** A figure at most `max` (NaN is not). */
export const atMost = (value: number, max: number): boolean => value <= max;

/** `+1.25%` / `-0.40%`: an error in %, its sign always shown. */
export function signedPct(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return `${value >= 0 ? '+' : ''}${value.toFixed(2)}%`;
}

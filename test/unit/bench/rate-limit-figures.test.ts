import { describe, expect, it } from 'vitest';
import { scriptMicros } from '../../bench/fleet-figures.js';
import {
  accuracyVerdict,
  admittedWindows,
  atLeast,
  atMost,
  callsPerCheckedRequest,
  loadBound,
  parseSkewAnswers,
  sideAShare,
  signedPct,
  verdict,
  withinTolerance,
  worstError,
  type AdmittedWindow,
  type SkewAnswer,
} from '../../bench/rate-limit-figures.js';

/**
 * `perSec` answers of `status` a second from `fromMs` for `seconds`, evenly spread, on
 * `side`, each sent `latencyMs` before it was answered.
 */
function steady(
  fromMs: number,
  seconds: number,
  perSec: number,
  status: number,
  side = 0,
  latencyMs = 0,
): SkewAnswer[] {
  return Array.from({ length: seconds * perSec }, (_, i) => {
    const answeredMs = fromMs + (i * 1000) / perSec;
    return { side, sentMs: answeredMs - latencyMs, answeredMs, status };
  });
}

describe('the accuracy windows', () => {
  it('reads the load client’s lines: side, sent, answered, status', () => {
    expect(parseSkewAnswers('0 1000.5 1002.25 200\n1 1001 1003 429\n')).toEqual([
      { side: 0, sentMs: 1000.5, answeredMs: 1002.25, status: 200 },
      { side: 1, sentMs: 1001, answeredMs: 1003, status: 429 },
    ]);
  });

  it('counts 200s by answer time in consecutive windows against the rate', () => {
    const answers = [...steady(0, 20, 1000, 200, 0, 0.5), ...steady(0, 20, 3000, 429, 1, 0.2)];
    const windows = admittedWindows(answers, 0, 5_000, 4, 1000, 100);
    expect(windows.map((w) => [w.fromMs, w.toMs, w.admitted, w.refused, w.allowed])).toEqual([
      [0, 5_000, 5_000, 15_000, 5_000],
      [5_000, 10_000, 5_000, 15_000, 5_000],
      [10_000, 15_000, 5_000, 15_000, 5_000],
      [15_000, 20_000, 5_000, 15_000, 5_000],
    ]);
    expect(windows.every((w) => w.errorPct === 0 && w.thinSlices === 0)).toBe(true);
  });

  it('finds the slices in which the load asked for less than the policy', () => {
    // Twice the rate asked for, but nothing answered from 7.0 s to 7.3 s: three 100 ms
    // slices of the second window are thin, and the 300 requests it lost never come back.
    const answers = [
      ...steady(0, 7, 1000, 200),
      ...steady(0, 7, 1000, 429),
      ...steady(7_300, 3, 1000, 200).slice(0, 2_700),
      ...steady(7_300, 3, 1000, 429),
    ];
    const [first, second] = admittedWindows(answers, 0, 5_000, 2, 1000, 100);
    expect(first?.thinSlices).toBe(0);
    expect(second?.thinSlices).toBe(3);
    expect(second?.admitted).toBe(4_700);
    expect(second && loadBound(second)).toBe(true);
  });

  it('leaves out what was answered before the first window and after the last', () => {
    // The initial burst (100 at once) before the windows start, and stragglers after them.
    const burst = Array.from({ length: 100 }, () => ({
      side: 0,
      sentMs: 0,
      answeredMs: 1,
      status: 200,
    }));
    const answers = [...burst, ...steady(2_000, 10, 1000, 200), ...steady(12_000, 1, 500, 200)];
    const windows = admittedWindows(answers, 2_000, 10_000, 1, 1000, 100);
    expect(windows[0]?.admitted).toBe(10_000);
    expect(windows[0]?.errorPct).toBe(0);
  });

  it('gives each window its error in % of what the policy allows', () => {
    // 5,100 in the first 5 s (+2%), 4,900 in the next (−2%), 4,800 in the last (−4%).
    const answers = [
      ...steady(0, 5, 1020, 200),
      ...steady(5_000, 5, 980, 200),
      ...steady(10_000, 5, 960, 200),
    ];
    const windows = admittedWindows(answers, 0, 5_000, 3, 1000, 100);
    expect(windows.map((w) => Math.round(w.errorPct * 100) / 100)).toEqual([2, -2, -4]);
    expect(worstError(windows)).toBeCloseTo(-4, 9);
    expect(withinTolerance(windows.slice(0, 2), 2)).toBe(true);
    expect(withinTolerance(windows, 2)).toBe(false);
  });

  it('meets no tolerance without a window', () => {
    expect(withinTolerance([], 2)).toBe(false);
    expect(worstError([])).toBeNaN();
  });
});

describe('Redis calls per rate-limited request', () => {
  it('divides the script runs by the requests answered 200 or 429 from the steady start', () => {
    const answers = [
      ...steady(0, 2, 1000, 200),
      ...steady(2_000, 10, 1000, 200),
      ...steady(2_000, 10, 3000, 429),
      // No answer, or a 503: the limiter decided nothing.
      ...steady(2_000, 1, 10, 0),
      ...steady(2_000, 1, 10, 503),
    ];
    expect(callsPerCheckedRequest(2_000, answers, 2_000)).toBeCloseTo(0.05, 9);
  });

  it('is NaN when no request was decided', () => {
    expect(callsPerCheckedRequest(10, steady(0, 1, 10, 0), 0)).toBeNaN();
  });
});

describe('the load’s split between the gateways', () => {
  it('is side A’s share of the requests sent in the interval', () => {
    const answers = [
      ...steady(0, 10, 900, 200, 0),
      ...steady(0, 10, 100, 429, 1),
      ...steady(10_000, 10, 100, 200, 0),
      ...steady(10_000, 10, 900, 429, 1),
    ];
    expect(sideAShare(answers, 0, 10_000)).toBeCloseTo(90, 9);
    expect(sideAShare(answers, 10_000, 20_000)).toBeCloseTo(10, 9);
    expect(sideAShare(answers, 30_000, 40_000)).toBeNaN();
  });
});

describe('the target lines', () => {
  it('passes a ratio at or above its target and fails one below or unmeasured', () => {
    expect(verdict(atLeast(0.97, 0.97))).toBe('PASS');
    expect(verdict(atLeast(0.96, 0.97))).toBe('FAIL');
    expect(verdict(atLeast(NaN, 0.85))).toBe('FAIL');
  });

  it('passes calls per request at or below the bound and fails NaN', () => {
    expect(atMost(0.1, 0.1)).toBe(true);
    expect(atMost(0.11, 0.1)).toBe(false);
    expect(atMost(NaN, 0.1)).toBe(false);
  });

  it('writes an error with its sign', () => {
    expect(signedPct(1.234)).toBe('+1.23%');
    expect(signedPct(-0.5)).toBe('-0.50%');
    expect(signedPct(0)).toBe('+0.00%');
    expect(signedPct(NaN)).toBe('n/a');
  });
});

describe('what one script run costs the masters', () => {
  it('is the µs per request beyond the row without scripts, per script run', () => {
    const exact = { mastersMicrosPerRequest: 45, scriptCallsPerRequest: 1 };
    expect(scriptMicros(exact, { mastersMicrosPerRequest: 1 })).toBe(44);
    const lease = { mastersMicrosPerRequest: 5.4, scriptCallsPerRequest: 0.1 };
    expect(scriptMicros(lease, { mastersMicrosPerRequest: 1 })).toBeCloseTo(44, 9);
  });

  it('is NaN without a script run or a row to compare with', () => {
    expect(
      scriptMicros({ mastersMicrosPerRequest: 1, scriptCallsPerRequest: 0 }, undefined),
    ).toBeNaN();
    expect(
      scriptMicros(
        { mastersMicrosPerRequest: 1, scriptCallsPerRequest: 0 },
        { mastersMicrosPerRequest: 1 },
      ),
    ).toBeNaN();
  });
});

describe('the accuracy verdict', () => {
  const window = (admitted: number, refused: number, thinSlices = 0): AdmittedWindow => ({
    fromMs: 0,
    toMs: 5_000,
    admitted,
    refused,
    allowed: 5_000,
    errorPct: ((admitted - 5_000) / 5_000) * 100,
    thinSlices,
  });

  it('leaves out a window under the policy in which the load was thin, never one over it', () => {
    expect(loadBound(window(4_582, 6_513, 4))).toBe(true);
    // Refusals all along: a limiter that admits too little is judged.
    expect(loadBound(window(4_800, 7_000))).toBe(false);
    // Over the policy is the limiter's doing, thin slices or not.
    expect(loadBound(window(5_200, 300, 10))).toBe(false);
  });

  it('judges the other windows against the tolerance', () => {
    const verdictOf = accuracyVerdict(
      [window(3_879, 688, 12), window(4_950, 10_000), window(5_050, 10_000)],
      2,
    );
    expect(verdictOf).toEqual({ judged: 2, loadBound: 1, worstPct: -1, met: true });
    expect(accuracyVerdict([window(4_800, 10_000)], 2).met).toBe(false);
  });

  it('judges nothing when every window was the load’s', () => {
    const none = accuracyVerdict([window(3_000, 100, 20)], 2);
    expect(none.met).toBeUndefined();
    expect(verdict(none.met)).toBe('n/a');
  });
});

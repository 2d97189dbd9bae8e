import { describe, expect, it } from 'vitest';
import {
  backAfter,
  HOLD_MS,
  lastOverEnd,
  STEP_MS,
  WINDOW_MS,
  windowP99s,
  type Answer,
} from '../../bench/population-restart.js';
import { failedAnswersOf } from '../../bench/population-gateways.js';
import {
  steadyNotes,
  steadySummary,
  steadyVerdict,
  type SteadyFigures,
  type SteadySide,
} from '../../bench/population-steady.js';

/** `perStep` answers of `latencyMs` in each STEP_MS from `from`, for `steps` steps. */
function answers(from: number, steps: number, perStep: number, latencyMs: number): Answer[] {
  return Array.from({ length: steps * perStep }, (_, i) => ({
    origin: 1,
    sentMs: from + Math.floor(i / perStep) * STEP_MS + (i % perStep) * (STEP_MS / perStep),
    latencyMs,
    status: 200,
  }));
}

describe('the restart windows', () => {
  it('reads a 1 s window every 250 ms, each over the answers sent in it', () => {
    const steps = 8;
    const windows = windowP99s(answers(0, steps, 100, 10), 0, steps * STEP_MS);
    expect(WINDOW_MS / STEP_MS).toBe(4);
    expect(windows).toHaveLength(steps - 3);
    expect(windows.every((p99) => p99 === 10)).toBe(true);
  });

  it('lets a lone stall pass but not a slow second', () => {
    const steady = answers(0, 8, 500, 10);
    // Eight slow answers in one step: they would put a 250 ms window (500 answers, its p99
    // the 5th slowest) over, but stay under a 1 s window's p99 (2,000 answers, the 20th).
    const stall = answers(STEP_MS * 4, 1, 8, 500);
    expect(Math.max(...windowP99s([...steady, ...stall], 0, 8 * STEP_MS))).toBe(10);
    // A tenth of every answer slow for a whole second: each window touching it is over.
    const slow = answers(0, 4, 50, 500);
    const windows = windowP99s([...steady, ...slow], 0, 8 * STEP_MS);
    expect(windows[0]).toBe(500);
    expect(windows.at(-1)).toBe(10);
  });

  it('counts a window in which nothing was sent as over', () => {
    // Nothing sent in the first second: the first window is over, the next ones are not.
    const late = answers(0, 8, 100, 10).filter((a) => a.sentMs >= WINDOW_MS);
    const windows = windowP99s(late, 0, 8 * STEP_MS);
    expect(windows[0]).toBe(Infinity);
    expect(windows.slice(1)).toEqual([10, 10, 10, 10]);
  });
});

describe('when a restart is back', () => {
  // 37 windows: 10 s after the switch; a hold is 5 windows (the first 1 s, then 4 steps).
  const within = (): number[] => Array.from({ length: 37 }, () => 10);
  const hold = (HOLD_MS - WINDOW_MS) / STEP_MS + 1;

  it('is 0 when every window is within the limit, and no window over ends anywhere', () => {
    expect(hold).toBe(5);
    expect(backAfter(within(), 20)).toBe(0);
    expect(lastOverEnd(within(), 20)).toBe(0);
  });

  it('is the end of the last window over before 2 s of windows within', () => {
    const windows = within();
    windows.fill(300, 0, 7);
    // Windows 0–6 over: the last one sent from 1.5 s to 2.5 s.
    expect(backAfter(windows, 20)).toBe(6 * STEP_MS + WINDOW_MS);
  });

  it('does not move for a later window over once 2 s were within; the last one is reported apart', () => {
    const windows = within();
    windows.fill(300, 0, 7);
    windows[16] = 25;
    expect(backAfter(windows, 20)).toBe(2_500);
    expect(lastOverEnd(windows, 20)).toBe(16 * STEP_MS + WINDOW_MS);
    // Within the 2 s that follow, a window over starts the count again.
    windows[16] = 10;
    windows[9] = 25;
    expect(backAfter(windows, 20)).toBe(9 * STEP_MS + WINDOW_MS);
  });

  it('is NaN when no 2 s within follow before the end, or nothing was sent', () => {
    const windows = within();
    windows.fill(300, 0, 37 - hold + 1);
    expect(backAfter(windows, 20)).toBeNaN();
    expect(backAfter(within().fill(Infinity), 20)).toBeNaN();
    expect(lastOverEnd(windows, 20)).toBe((37 - hold) * STEP_MS + WINDOW_MS);
  });
});

const side = (rps: number, p99Ms: number, hits = 0, bcrypt = 0): SteadySide => ({
  rps,
  p50Ms: p99Ms / 2,
  p99Ms,
  cpuMicrosPerRequest: 1e6 / rps,
  requests: rps * 5,
  errors: 0,
  counters: {
    bcryptCompares: bcrypt,
    recordChecks: { hit: hits, absent: 0, ended: 0, other_key: 0, refused: 0 },
    failedAnswers: {},
  },
});

describe('the steady state', () => {
  const figures: SteadyFigures = {
    engine: 'undici',
    baseSize: 1,
    largeSize: 100_000,
    runs: [
      { base: side(4000, 20), large: side(3000, 30, 3000) },
      { base: side(2000, 40), large: side(1800, 60, 1800) },
      { base: side(3000, 30), large: side(2100, 70, 2100) },
    ],
  };

  it("takes the median of each run's ratio, not the ratio of the medians", () => {
    const s = steadySummary(figures);
    // Per-run req/s ratios 0.75, 0.9, 0.7: their median 0.75; the medians' ratio would be
    // 2100 / 3000 = 0.7.
    expect(s.rpsRatio).toBeCloseTo(0.75);
    // Per-run p99 ratios 1.5, 1.5, 2.33.
    expect(s.p99Ratio).toBeCloseTo(1.5);
    expect(s.recordChecksPerRequest).toBeCloseTo(0.2);
    expect(
      steadyVerdict(s, { rpsAtLeast: 0.7, p99AtMost: 2, bcryptPerRequestAtMost: 0.001 }),
    ).toEqual({ rps: true, p99: true, bcrypt: true });
  });

  it('leaves runs with errors out of the medians and fails a target it misses', () => {
    const withErrors: SteadyFigures = {
      ...figures,
      runs: [
        ...figures.runs,
        { base: side(4000, 20), large: { ...side(100, 900, 0, 50), errors: 3 } },
      ],
    };
    const s = steadySummary(withErrors);
    expect(s.validRuns).toBe(3);
    expect(s.errors).toBe(3);
    expect(s.rpsRatio).toBeCloseTo(0.75);
    // Its bcrypt runs still count: a run with errors is no excuse for them.
    expect(s.bcryptPerRequest).toBeGreaterThan(0.001);
    expect(
      steadyVerdict(s, { rpsAtLeast: 0.95, p99AtMost: 1.2, bcryptPerRequestAtMost: 0.001 }),
    ).toEqual({ rps: false, p99: false, bcrypt: false });
  });

  it("says what a run's errors were, by the gateways' own count of their answers", () => {
    const large = side(100, 900);
    const withErrors: SteadyFigures = {
      ...figures,
      runs: [
        ...figures.runs,
        {
          base: side(4000, 20),
          large: {
            ...large,
            errors: 53,
            counters: { ...large.counters, failedAnswers: { '503 gateway': 51, '502 gateway': 2 } },
          },
        },
      ],
    };
    const targets = { rpsAtLeast: 0.8, p99AtMost: 2, bcryptPerRequestAtMost: 0.001 };
    const load = { connections: 64, seconds: 5 };
    expect(steadyNotes([withErrors], targets, load)).toContain(
      "errors, undici: 53 counted by wrk; the gateways' own answers other than 2xx in those runs (status, and who gave it: the gateway or the upstream): 1 pair none; 100,000 pairs 51 × 503 gateway, 2 × 502 gateway",
    );
    expect(steadyNotes([figures], targets, load).some((line) => line.startsWith('errors'))).toBe(
      false,
    );
  });
});

describe("a gateway's answers other than 2xx, from its /metrics", () => {
  it('sums gateway_requests_total over routes by status and source, leaving out 2xx', () => {
    const metrics = [
      '# HELP gateway_requests_total Requests answered.',
      '# TYPE gateway_requests_total counter',
      'gateway_requests_total{route="accounts",status="200",source="upstream"} 9000',
      'gateway_requests_total{route="accounts",status="503",source="gateway"} 40',
      'gateway_requests_total{route="account",status="503",source="gateway"} 11',
      'gateway_requests_total{route="accounts",status="404",source="upstream"} 3',
      'gateway_requests_total_other{route="accounts",status="500",source="gateway"} 7',
    ].join('\n');
    expect(failedAnswersOf(metrics)).toEqual({ '503 gateway': 51, '404 upstream': 3 });
  });
});

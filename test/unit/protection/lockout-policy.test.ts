import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_COUNTER,
  isEmpty,
  isGuarded,
  keepMs,
  lockMsAfter,
  recordFailure,
  release,
  reserve,
  RESERVATION_MS,
  waitMs,
  type CounterState,
  type LockoutLimit,
} from '../../../src/protection/lockout-policy.js';

const LIMIT: LockoutLimit = { threshold: 3, initialLockMs: 1_000, maxLockMs: 8_000 };
const T0 = Date.UTC(2030, 0, 1);

const limits = fc.record({
  threshold: fc.integer({ min: 1, max: 50 }),
  initialLockMs: fc.integer({ min: 1, max: 60_000 }),
  maxLockMs: fc.integer({ min: 1, max: 86_400_000 }),
});

/** Fails `n` attempts one after another, each when the counter lets it. */
function failSequentially(n: number, limit: LockoutLimit, start = T0) {
  let state: CounterState = EMPTY_COUNTER;
  let now = start;
  for (let i = 0; i < n; i += 1) {
    now += waitMs(state, now, limit);
    state = recordFailure(reserve(state, now), now, limit);
  }
  return { state, now };
}

describe('lockMsAfter', () => {
  it('locks nothing below the threshold, then doubles from the initial lock up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((f) => lockMsAfter(f, LIMIT))).toEqual([
      0, 0, 1_000, 2_000, 4_000, 8_000, 8_000,
    ]);
  });

  it('never exceeds the cap, never shrinks as failures grow, and is finite however many failures', () => {
    fc.assert(
      fc.property(limits, fc.integer({ min: 0, max: 100_000 }), (limit, failures) => {
        const lock = lockMsAfter(failures, limit);
        const next = lockMsAfter(failures + 1, limit);
        expect(Number.isFinite(lock)).toBe(true);
        expect(lock).toBeLessThanOrEqual(Math.max(limit.maxLockMs, 0));
        expect(next).toBeGreaterThanOrEqual(lock);
        expect(lock > 0).toBe(failures >= limit.threshold);
      }),
    );
  });
});

describe('waitMs: the check before each attempt', () => {
  it('lets threshold failures through at once, then refuses for the lock the last one started', () => {
    const { state, now } = failSequentially(3, LIMIT);
    expect(now).toBe(T0);
    expect(waitMs(state, now, LIMIT)).toBe(1_000);
    expect(waitMs(state, now + 999, LIMIT)).toBe(1);
    expect(waitMs(state, now + 1_000, LIMIT)).toBe(0);
  });

  it('doubles the lock with each failure past the threshold, up to the cap', () => {
    const { state, now } = failSequentially(6, LIMIT);
    // Waits of 1 s, 2 s and 4 s came before the 4th, 5th and 6th failures.
    expect(now).toBe(T0 + 7_000);
    expect(waitMs(state, now, LIMIT)).toBe(8_000);
  });

  it('holds a parallel burst to the threshold: reservations count before any failure is recorded', () => {
    fc.assert(
      fc.property(limits, fc.integer({ min: 1, max: 200 }), (limit, burst) => {
        let state: CounterState = EMPTY_COUNTER;
        let admitted = 0;
        for (let i = 0; i < burst; i += 1) {
          if (waitMs(state, T0, limit) > 0) continue;
          state = reserve(state, T0);
          admitted += 1;
        }
        expect(admitted).toBe(Math.min(burst, limit.threshold));
      }),
    );
  });

  it('past the threshold, lets one attempt at a time through once the lock has ended', () => {
    const { state, now } = failSequentially(3, LIMIT);
    const after = now + 1_000;
    const one = reserve(state, after);
    expect(waitMs(one, after, LIMIT)).toBe(2_000);
    // Given back without a verdict (store down): the next may go.
    expect(waitMs(release(one, after), after, LIMIT)).toBe(0);
  });

  it('forgets a reservation older than RESERVATION_MS (a process that died mid-check)', () => {
    let state: CounterState = EMPTY_COUNTER;
    for (let i = 0; i < 3; i += 1) state = reserve(state, T0);
    expect(waitMs(state, T0, LIMIT)).toBeGreaterThan(0);
    expect(waitMs(state, T0 + RESERVATION_MS + 1, LIMIT)).toBe(0);
  });

  it('never admits more attempts in a lock-free stretch than the threshold, however they interleave', () => {
    // Random interleavings of begin/fail/succeed-elsewhere/no-verdict, all at one instant:
    // the failures recorded plus those in flight never pass the threshold.
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('begin', 'fail', 'release'), { maxLength: 300 }),
        (steps) => {
          let state: CounterState = EMPTY_COUNTER;
          for (const step of steps) {
            if (step === 'begin' && waitMs(state, T0, LIMIT) === 0) state = reserve(state, T0);
            else if (step === 'fail' && state.pending > 0) state = recordFailure(state, T0, LIMIT);
            else if (step === 'release' && state.pending > 0) state = release(state, T0);
            expect(state.failures + state.pending).toBeLessThanOrEqual(LIMIT.threshold);
          }
        },
      ),
    );
  });
});

describe('keepMs and isEmpty', () => {
  it('keeps a counter windowMs past the end of its lock, and at least a reservation long', () => {
    const { state, now } = failSequentially(3, LIMIT);
    expect(keepMs(state, now, 60_000)).toBe(61_000);
    expect(keepMs(EMPTY_COUNTER, now, 1_000)).toBe(RESERVATION_MS);
  });

  it('calls a counter empty once nothing is counted, pending or locked', () => {
    expect(isEmpty(EMPTY_COUNTER, T0)).toBe(true);
    expect(isEmpty(reserve(EMPTY_COUNTER, T0), T0)).toBe(false);
    expect(isEmpty(release(reserve(EMPTY_COUNTER, T0), T0), T0)).toBe(true);
    expect(isEmpty(failSequentially(1, LIMIT).state, T0)).toBe(false);
  });
});

describe('isGuarded', () => {
  it('guards a locked counter and one at half its threshold or more, not one below', () => {
    const limit: LockoutLimit = { ...LIMIT, threshold: 4 };
    const at = (failures: number, lockedUntil = 0): CounterState => ({
      ...EMPTY_COUNTER,
      failures,
      lockedUntil,
    });
    expect([0, 1, 2, 3].map((f) => isGuarded(at(f), T0, limit))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    expect(isGuarded(at(0, T0 + 1), T0, limit)).toBe(true);
    expect(isGuarded(at(0, T0), T0, limit)).toBe(false);
  });
});

/**
 * The lockout policy as pure functions over one counter's state: what the in-process lockout
 * runs, and what the Redis backend's script (backends/redis/scripts/lockout.lua) mirrors line
 * by line in Lua. Times are milliseconds on one clock (the process's, or Redis's TIME).
 */

/** One counter's limit: `threshold` failures, then locks doubling from the initial one. */
export interface LockoutLimit {
  readonly threshold: number;
  readonly initialLockMs: number;
  readonly maxLockMs: number;
}

/** What one counter holds. */
export interface CounterState {
  /** Failures recorded (a success clears the (key or username, address) counter only). */
  readonly failures: number;
  /** Attempts begun and not settled yet. */
  readonly pending: number;
  /** When the last reservation was made: reservations older than RESERVATION_MS are void. */
  readonly pendingAt: number;
  /** Until when the counter refuses every attempt (0: not locked). */
  readonly lockedUntil: number;
}

export const EMPTY_COUNTER: CounterState = {
  failures: 0,
  pending: 0,
  pendingAt: 0,
  lockedUntil: 0,
};

/**
 * How long an unsettled reservation counts. A check settles within the request's life (the
 * store and bcrypt are both bounded), so only a process that died mid-check leaves one:
 * forgotten after this, rather than holding the counter until it expires.
 */
export const RESERVATION_MS = 60_000;

/**
 * The lock that the `failures`-th failure starts: none below the threshold, then
 * initialLockMs doubled per failure beyond it, at most maxLockMs.
 */
export function lockMsAfter(failures: number, limit: LockoutLimit): number {
  if (failures < limit.threshold) return 0;
  // 2 ** n overflows to Infinity for huge n, which Math.min turns into the cap.
  return Math.min(limit.initialLockMs * 2 ** (failures - limit.threshold), limit.maxLockMs);
}

/** Pending attempts that still count at `now`. */
export function livePending(state: CounterState, now: number): number {
  return now - state.pendingAt > RESERVATION_MS ? 0 : state.pending;
}

/**
 * How long an attempt must wait, 0 when it may go ahead: while locked, the rest of the lock;
 * and once the attempts in flight would reach the threshold, the lock they would start —
 * so a burst of parallel guesses gets `threshold` of them through, and past the threshold
 * one at a time, never all at once before the first failure is recorded.
 */
export function waitMs(state: CounterState, now: number, limit: LockoutLimit): number {
  if (state.lockedUntil > now) return state.lockedUntil - now;
  const pending = livePending(state, now);
  if (pending > 0 && state.failures + pending >= limit.threshold)
    return Math.max(1, lockMsAfter(state.failures + pending, limit));
  return 0;
}

/** The counter once an attempt is reserved. */
export function reserve(state: CounterState, now: number): CounterState {
  return { ...state, pending: livePending(state, now) + 1, pendingAt: now };
}

/** The counter once an attempt has failed: one more failure, and a lock past the threshold. */
export function recordFailure(state: CounterState, now: number, limit: LockoutLimit): CounterState {
  const failures = state.failures + 1;
  const lockMs = lockMsAfter(failures, limit);
  return {
    failures,
    pending: Math.max(0, livePending(state, now) - 1),
    pendingAt: state.pendingAt,
    lockedUntil: lockMs > 0 ? now + lockMs : state.lockedUntil,
  };
}

/** The counter once an attempt ended without a failure (success elsewhere, or no verdict). */
export function release(state: CounterState, now: number): CounterState {
  return { ...state, pending: Math.max(0, livePending(state, now) - 1) };
}

/**
 * How long a counter is kept after a write at `now`: `windowMs` past its lock's end (so the
 * next failure after a lock still doubles it), and never less than a reservation's life.
 */
export function keepMs(state: CounterState, now: number, windowMs: number): number {
  return Math.max(Math.max(0, state.lockedUntil - now) + windowMs, RESERVATION_MS);
}

/**
 * A counter worth keeping over others when memory is short: locked, or with half its
 * threshold of failures or more. Dropping it would give its attacker a fresh count.
 */
export function isGuarded(state: CounterState, now: number, limit: LockoutLimit): boolean {
  return state.lockedUntil > now || state.failures * 2 >= limit.threshold;
}

/** A counter with nothing in it can be dropped. */
export function isEmpty(state: CounterState, now: number): boolean {
  return state.failures === 0 && livePending(state, now) === 0 && state.lockedUntil <= now;
}

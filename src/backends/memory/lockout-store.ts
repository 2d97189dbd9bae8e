import type { LockoutConfig } from '../../config/config-schema.js';
import { createCounterTable } from '../../protection/counter-table.js';
import {
  EMPTY_COUNTER,
  isEmpty,
  isGuarded,
  keepMs,
  lockMsAfter,
  recordFailure,
  release,
  reserve,
  waitMs,
  type CounterState,
  type LockoutLimit,
} from '../../protection/lockout-policy.js';
import {
  counterKey,
  countersOf,
  counterLimits,
  LOCKOUT_SCOPES,
  toRetryAfterSec,
  type AttemptOutcome,
  type LockStarted,
  type Lockout,
  type LockoutAttempt,
  type LockoutRefusal,
  type LockoutTarget,
} from '../../protection/lockout.js';

interface Entry {
  state: CounterState;
  expiresAt: number;
}

/** The limits of a target's three counters, in their order (counterLimits). */
type Limits = ReturnType<typeof counterLimits>;

/** The counters of this process: read as of `at` (an expired one is gone), written with a life. */
interface Counters {
  read(id: string, at: number): CounterState;
  write(id: string, state: CounterState, at: number, limit: LockoutLimit): void;
  drop(id: string): void;
}

/**
 * The lockout in this process, for the memory store (one process by definition): the policy
 * of lockout-policy.ts over a bounded map, the same answers as the Redis script gives. At
 * the bound, ordinary counters are dropped first (least recently used); a locked counter, or
 * one at half its threshold, only when no ordinary one is left (counter-table.ts).
 */
export function createMemoryLockout(config: LockoutConfig, now: () => number = Date.now): Lockout {
  const counters = counterTable(config);
  return {
    begin(target) {
      const at = now();
      const ids = countersOf(target).map(counterKey);
      const limits = counterLimits(config, target.kind);
      const states = ids.map((id) => counters.read(id, at));
      const refusal = longestRefusal(target.kind, states, limits, at);
      if (refusal !== undefined) return Promise.resolve(refusal);
      ids.forEach((id, i) =>
        counters.write(id, reserve(states[i] ?? EMPTY_COUNTER, at), at, limits[i] ?? limits[0]),
      );
      return Promise.resolve({
        kind: 'allow',
        attempt: attemptOf({ counters, now, ids, limits, kind: target.kind }),
      });
    },
    checkAddress(kind, network) {
      const at = now();
      const id = counterKey(countersOf({ kind, id: '', network })[0]);
      const [limit] = counterLimits(config, kind);
      const state = counters.read(id, at);
      const wait = waitMs(state, at, limit);
      return Promise.resolve(
        wait > 0
          ? {
              kind: 'refuse',
              scope: LOCKOUT_SCOPES[kind][0],
              retryAfterSec: toRetryAfterSec(wait),
              locked: state.lockedUntil > at,
            }
          : undefined,
      );
    },
  };
}

/** The counters in a bounded table (counter-table.ts), each kept as long as keepMs says. */
function counterTable(config: LockoutConfig): Counters {
  const counters = createCounterTable<Entry>(config.maxTrackedCounters);
  const windowMs = config.windowSec * 1000;
  return {
    read(id, at) {
      const entry = counters.get(id);
      if (entry === undefined) return EMPTY_COUNTER;
      if (entry.expiresAt <= at) {
        counters.delete(id);
        return EMPTY_COUNTER;
      }
      return entry.state;
    },
    write(id, state, at, limit) {
      if (isEmpty(state, at)) {
        counters.delete(id);
        return;
      }
      const previous = counters.get(id)?.expiresAt ?? 0;
      const expiresAt = Math.max(previous, at + keepMs(state, at, windowMs));
      counters.set(id, { state, expiresAt }, isGuarded(state, at, limit));
    },
    drop(id) {
      counters.delete(id);
    },
  };
}

/** The counter that refuses longest, as a refusal; undefined when none refuses. */
function longestRefusal(
  kind: LockoutTarget['kind'],
  states: readonly CounterState[],
  limits: Limits,
  at: number,
): LockoutRefusal | undefined {
  let refusal: LockoutRefusal | undefined;
  let longest = 0;
  states.forEach((state, i) => {
    const wait = waitMs(state, at, limits[i] ?? limits[0]);
    if (wait > longest) {
      longest = wait;
      refusal = {
        kind: 'refuse',
        scope: LOCKOUT_SCOPES[kind][i] ?? LOCKOUT_SCOPES[kind][0],
        retryAfterSec: toRetryAfterSec(wait),
        locked: state.lockedUntil > at,
      };
    }
  });
  return refusal;
}

/** The attempt reserved on counters `ids`: settled once. */
function attemptOf(deps: {
  readonly counters: Counters;
  readonly now: () => number;
  readonly ids: readonly string[];
  readonly limits: Limits;
  readonly kind: LockoutTarget['kind'];
}): LockoutAttempt {
  const { counters, now, ids, limits, kind } = deps;
  let settled = false;
  return {
    settle(outcome: AttemptOutcome) {
      if (settled) return Promise.resolve([]);
      settled = true;
      const when = now();
      const locks: LockStarted[] = [];
      ids.forEach((id, i) => {
        const state = counters.read(id, when);
        const limit = limits[i] ?? limits[0];
        if (outcome === 'success' && i === 1) {
          counters.drop(id);
        } else if (outcome === 'failure') {
          const next = recordFailure(state, when, limit);
          counters.write(id, next, when, limit);
          const lockMs = lockMsAfter(next.failures, limit);
          if (lockMs > 0) {
            locks.push({
              scope: LOCKOUT_SCOPES[kind][i] ?? LOCKOUT_SCOPES[kind][0],
              lockSec: lockMs / 1000,
              failures: next.failures,
            });
          }
        } else if (state !== EMPTY_COUNTER) {
          counters.write(id, release(state, when), when, limit);
        }
      });
      return Promise.resolve(locks);
    },
  };
}

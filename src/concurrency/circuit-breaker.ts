/**
 * A circuit breaker: once a dependency has failed `failureThreshold` calls in a row, calls
 * are refused at once instead of each waiting for the dependency's timeout, and one probe at
 * a time tests whether it answers again.
 *
 *   closed --N consecutive failures--> open --openMs elapsed, next call--> half-open (1 probe)
 *   half-open --probe succeeds--> closed (backoff back to openMs)
 *   half-open --probe fails, or is not settled within probeTimeoutMs--> open (backoff x2, <= maxOpenMs)
 *
 * A pure state machine: no timer, no I/O. It reads the injected clock when asked, and tells
 * `onChange` of each open and close for the caller's log line and metric.
 *
 * **Consecutive failures, not a failure rate over a window.** Redis either answers or does
 * not: a failover, a partition or a dead process fails every call, so under any load N
 * failures in a row arrive within one command timeout, while one success proves it answers
 * and resets the count. A rate over a window needs a minimum volume and a window tuned to the
 * traffic; at low traffic it would leave a dead Redis costing each request its timeout for
 * the window's length, and at high traffic it opens no sooner than the count does. Only
 * infrastructure failures count (a timeout, a refused or reset connection, a Cluster that is
 * down): the caller says which. A denial is an answer, so is a Redis error reply (WRONGTYPE,
 * a script error): Redis is there.
 *
 * **One breaker per thing that fails alone.** Standalone and Sentinel: one per Redis path
 * (or one shared: they fail together). On a Cluster, one per master (the node owning the
 * key's slot): one breaker for the whole Cluster would be reset by the live masters'
 * successes and never open for the dead one's slots, whose requests would keep waiting.
 *
 * **How each path maps a refusal** (`admitted: false`, or `CircuitOpenError` from `run`):
 * - rate limits: as `rateLimits.onStoreError` says, as for a failed check: `open` lets the
 *   request through (warning, metric), `closed` answers 503 `credential_store_unavailable`;
 * - a lockout check, a credential-cache miss (the store read): 503
 *   `credential_store_unavailable` with `Retry-After` from `retryAfterMs` (cached pairs keep
 *   working: they never reach the store);
 * - last-use writes: deferred, the batch kept for the next interval, whose write is then the
 *   probe.
 * Probing needs no timer: the first call after the backoff is the probe, so a path without
 * traffic simply probes with its next request.
 *
 * **Suggested timing** for Redis: `failureThreshold` 3 (one slow command, a GC pause, must
 * not refuse everything), `openMs` 200 (a reconnect is over by then), `maxOpenMs` 1000 (a
 * Cluster or Sentinel promotion is seen at most a second plus one call later, well inside
 * the issue's 2 s, for one probe per second per breaker while Redis is away),
 * `probeTimeoutMs` above the longest a call can take (the command timeout times its tries).
 */
export interface CircuitBreakerOptions {
  /** Consecutive infrastructure failures that open the breaker (at least 1). */
  readonly failureThreshold: number;
  /** How long it stays open the first time before a probe may go. */
  readonly openMs: number;
  /** The cap of the backoff, which doubles after each failed probe. */
  readonly maxOpenMs: number;
  /**
   * A probe not settled this long after it went is presumed failed, so that a lost settle
   * can never keep the breaker half-open, refusing everything, for good.
   */
  readonly probeTimeoutMs: number;
  /** Milliseconds on any monotonic scale; only differences are used. */
  readonly now: () => number;
  /** Told of each open and each close (not of a failed probe: the breaker stays open). */
  readonly onChange?: (change: BreakerChange) => void;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

export type BreakerChange =
  /** `failures`: the consecutive failures that opened it; `retryAfterMs`: until the first probe. */
  | { readonly kind: 'opened'; readonly failures: number; readonly retryAfterMs: number }
  /** `openForMs`: from opening to the probe's success. */
  | { readonly kind: 'closed'; readonly openForMs: number };

/** What a call that went reports: the dependency answered, or failed as infrastructure. */
export type CallOutcome = 'success' | 'failure';

export type Admission =
  | {
      readonly admitted: true;
      /** This call decides whether the breaker closes. */
      readonly probe: boolean;
      /** Report how the call ended, once; later reports, and reports of a past state, are ignored. */
      settle(outcome: CallOutcome): void;
    }
  /** Refused at once; `retryAfterMs` (> 0): until a probe may go, or the probe's deadline. */
  | { readonly admitted: false; readonly retryAfterMs: number };

export interface CircuitBreaker {
  /** Whether a call may go now; an admitted call must be settled. */
  admit(): Admission;
  /**
   * Runs `call` if admitted and settles it: a rejection `isFailure` calls infrastructure
   * counts as a failure, anything else (a value, any other error) as an answer. Rejects with
   * `CircuitOpenError` at once when refused; otherwise passes `call`'s result on unchanged.
   */
  run<T>(call: () => Promise<T>, isFailure: (error: unknown) => boolean): Promise<T>;
  /**
   * Something other than a call says the dependency is back (its connection is ready
   * again): while open, the next call may probe at once instead of after the backoff. The
   * probe still decides; the backoff is kept for it, should it fail.
   */
  probeNow(): void;
  /** As of the last call: `open` stays `open` past its backoff until a probe is admitted. */
  readonly state: BreakerState;
}

/** A refusal of `run`: the dependency is presumed down; the caller answers by its policy. */
export class CircuitOpenError extends Error {
  constructor(readonly retryAfterMs: number) {
    super('circuit open: the dependency failed repeatedly and is being probed');
    this.name = 'CircuitOpenError';
  }
}

export function createCircuitBreaker(options: CircuitBreakerOptions): CircuitBreaker {
  const { failureThreshold, openMs, maxOpenMs, probeTimeoutMs, now } = options;
  if (!(failureThreshold >= 1 && openMs > 0 && maxOpenMs >= openMs && probeTimeoutMs > 0))
    throw new TypeError(
      'a circuit breaker needs failureThreshold >= 1, openMs > 0, maxOpenMs >= openMs and probeTimeoutMs > 0',
    );
  const onChange = options.onChange ?? (() => undefined);
  let state: BreakerState = 'closed';
  let failures = 0;
  let backoffMs = openMs;
  let openedAt = 0;
  let openUntil = 0;
  let probeDeadline = 0;
  // Bumped on every change of state: a call settles only the state it was admitted in, so
  // the late failures of calls that were in flight when the breaker opened neither lengthen
  // its backoff nor count against it once it has closed again.
  let epoch = 0;

  const open = (at: number): void => {
    epoch += 1;
    state = 'open';
    openUntil = at + backoffMs;
  };

  const settleClosed = (outcome: CallOutcome): void => {
    if (outcome === 'success') {
      failures = 0;
      return;
    }
    failures += 1;
    if (failures < failureThreshold) return;
    const at = now();
    openedAt = at;
    open(at);
    onChange({ kind: 'opened', failures, retryAfterMs: backoffMs });
  };

  const settleProbe = (outcome: CallOutcome): void => {
    const at = now();
    if (outcome === 'failure') {
      backoffMs = Math.min(backoffMs * 2, maxOpenMs);
      open(at);
      return;
    }
    epoch += 1;
    state = 'closed';
    failures = 0;
    backoffMs = openMs;
    onChange({ kind: 'closed', openForMs: at - openedAt });
  };

  const admitted = (probe: boolean): Admission => {
    const admittedIn = epoch;
    let settled = false;
    return {
      admitted: true,
      probe,
      settle(outcome) {
        if (settled || admittedIn !== epoch) return;
        settled = true;
        if (probe) settleProbe(outcome);
        else settleClosed(outcome);
      },
    };
  };

  const admit = (): Admission => {
    if (state === 'closed') return admitted(false);
    const at = now();
    if (state === 'half-open') {
      if (at < probeDeadline) return { admitted: false, retryAfterMs: probeDeadline - at };
      // The probe was lost or hangs: presumed failed, so the breaker backs off again.
      settleProbe('failure');
    }
    if (at < openUntil) return { admitted: false, retryAfterMs: openUntil - at };
    epoch += 1;
    state = 'half-open';
    probeDeadline = at + probeTimeoutMs;
    return admitted(true);
  };

  return {
    admit,
    async run(call, isFailure) {
      const admission = admit();
      if (!admission.admitted) throw new CircuitOpenError(admission.retryAfterMs);
      try {
        const value = await call();
        admission.settle('success');
        return value;
      } catch (error) {
        admission.settle(isFailure(error) ? 'failure' : 'success');
        throw error;
      }
    },
    probeNow() {
      if (state === 'open') openUntil = Math.min(openUntil, now());
    },
    get state() {
      return state;
    },
  };
}

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
  checkOptions(options);
  const machine: Machine = {
    options,
    onChange: options.onChange ?? (() => undefined),
    state: 'closed',
    failures: 0,
    backoffMs: options.openMs,
    openedAt: 0,
    openUntil: 0,
    probeDeadline: 0,
    epoch: 0,
  };
  const admit = (): Admission => admitCall(machine);
  return {
    admit,
    run: (call, isFailure) => runAdmitted(admit, call, isFailure),
    probeNow() {
      if (machine.state === 'open') machine.openUntil = Math.min(machine.openUntil, options.now());
    },
    get state() {
      return machine.state;
    },
  };
}

function checkOptions(options: CircuitBreakerOptions): void {
  const { failureThreshold, openMs, maxOpenMs, probeTimeoutMs } = options;
  if (!(failureThreshold >= 1 && openMs > 0 && maxOpenMs >= openMs && probeTimeoutMs > 0))
    throw new TypeError(
      'a circuit breaker needs failureThreshold >= 1, openMs > 0, maxOpenMs >= openMs and probeTimeoutMs > 0',
    );
}

/** A breaker's state: one per breaker, changed only by the functions below. */
interface Machine {
  readonly options: CircuitBreakerOptions;
  readonly onChange: (change: BreakerChange) => void;
  state: BreakerState;
  failures: number;
  backoffMs: number;
  openedAt: number;
  openUntil: number;
  probeDeadline: number;
  /**
   * Bumped on every change of state: a call settles only the state it was admitted in, so
   * the late failures of calls that were in flight when the breaker opened neither lengthen
   * its backoff nor count against it once it has closed again.
   */
  epoch: number;
}

function open(machine: Machine, at: number): void {
  machine.epoch += 1;
  machine.state = 'open';
  machine.openUntil = at + machine.backoffMs;
}

function settleClosed(machine: Machine, outcome: CallOutcome): void {
  if (outcome === 'success') {
    machine.failures = 0;
    return;
  }
  machine.failures += 1;
  if (machine.failures < machine.options.failureThreshold) return;
  const at = machine.options.now();
  machine.openedAt = at;
  open(machine, at);
  machine.onChange({
    kind: 'opened',
    failures: machine.failures,
    retryAfterMs: machine.backoffMs,
  });
}

function settleProbe(machine: Machine, outcome: CallOutcome): void {
  const { now, openMs, maxOpenMs } = machine.options;
  const at = now();
  if (outcome === 'failure') {
    machine.backoffMs = Math.min(machine.backoffMs * 2, maxOpenMs);
    open(machine, at);
    return;
  }
  machine.epoch += 1;
  machine.state = 'closed';
  machine.failures = 0;
  machine.backoffMs = openMs;
  machine.onChange({ kind: 'closed', openForMs: at - machine.openedAt });
}

function admitted(machine: Machine, probe: boolean): Admission {
  const admittedIn = machine.epoch;
  let settled = false;
  return {
    admitted: true,
    probe,
    settle(outcome) {
      if (settled || admittedIn !== machine.epoch) return;
      settled = true;
      if (probe) settleProbe(machine, outcome);
      else settleClosed(machine, outcome);
    },
  };
}

function admitCall(machine: Machine): Admission {
  if (machine.state === 'closed') return admitted(machine, false);
  const at = machine.options.now();
  if (machine.state === 'half-open') {
    if (at < machine.probeDeadline)
      return { admitted: false, retryAfterMs: machine.probeDeadline - at };
    // The probe was lost or hangs: presumed failed, so the breaker backs off again.
    settleProbe(machine, 'failure');
  }
  if (at < machine.openUntil) return { admitted: false, retryAfterMs: machine.openUntil - at };
  machine.epoch += 1;
  machine.state = 'half-open';
  machine.probeDeadline = at + machine.options.probeTimeoutMs;
  return admitted(machine, true);
}

/** CircuitBreaker.run: `call` if `admit` lets it go, settled by how it ends. */
async function runAdmitted<T>(
  admit: () => Admission,
  call: () => Promise<T>,
  isFailure: (error: unknown) => boolean,
): Promise<T> {
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
}

import { bucketKey } from './local-buckets.js';
import { emissionIntervalUs, type RatePolicy } from './rate-policy.js';
import type {
  BucketRequest,
  BucketState,
  RateBucketStore,
  TakeResult,
} from './rate-bucket-store.js';

/** `rateLimits.lease`: how much of a shared bucket one process may hold, and how long. */
export interface LeaseSettings {
  /** A lease holds at most this long of its bucket's rate: the bound of the fleet's excess. */
  readonly spanMs: number;
  /** Unspent requests of a lease lapse this long after it was taken; the policy is re-read. */
  readonly lifeMs: number;
}

export interface LeasedBucketsDeps {
  /** The shared store (Redis): every take of it is one round trip. */
  readonly shared: RateBucketStore;
  /** Decides a lease bucket while the shared store cannot: in process, at its policy. */
  readonly fallback: RateBucketStore;
  /** A failure of the shared store that the fallback answered for (counted, warned). */
  readonly onFallback: (error: unknown) => void;
  readonly maxLeases: number;
  readonly nowUs?: () => number;
}

/** After a failure, lease buckets go to the fallback this long before the store is tried. */
export const RETRY_SHARED_AFTER_US = 1_000_000;

interface Lease {
  /** The policy the store applied (an override's when set); undefined: no limit. */
  policy: RatePolicy | undefined;
  /** Requests charged in the shared store and not yet spent here. */
  tokens: number;
  takenAtUs: number;
  /** The tokens lapse then, and the policy is read again. */
  endsAtUs: number;
  /** Requests seen since the last take: this process's demand, which sizes the next. */
  demand: number;
  /** What the store said at the last take, for the headers. */
  sharedRemaining: number;
  sharedWaitUs: number;
  /**
   * Emptied or refused by the store: not asked again before this (the next lease, or the
   * lease's life when that is sooner, so that an override lifting a limit is read)…
   */
  holdUntilUs: number;
  /** …and when a request may pass by what the store said (a held refusal's Retry-After). */
  retryAtUs: number;
  /** A take in flight: other requests await it instead of taking a lease of their own. */
  pending: Promise<unknown> | undefined;
}

type Plan =
  | { readonly kind: 'exact'; readonly request: BucketRequest }
  | { readonly kind: 'local'; readonly request: BucketRequest; readonly lease: Lease }
  | { readonly kind: 'held'; readonly request: BucketRequest; readonly lease: Lease }
  | {
      readonly kind: 'lease';
      readonly request: BucketRequest;
      readonly lease: Lease;
      readonly want: number;
    };

const isLeased = (b: BucketRequest): boolean => b.mode !== 'exact';

/**
 * Local-first buckets (issue 28): a process takes a share of a shared bucket in one round
 * trip (a lease: up to `spanMs` of the bucket's rate, sized by this process's own demand)
 * and spends it here, taking the next in the background while a quarter is left (or when it
 * is spent or has lapsed). Every lease is charged in
 * the store before a request of it passes, so over any interval the fleet admits at most
 * what the policy admits plus the leases held at its start: with P processes at most P ×
 * `spanMs` of the rate (docs/security.md). Exact-mode buckets ask the store per request.
 *
 * A process takes one lease of a bucket at a time; a refusal holds the bucket until the
 * store would have the next lease, so a fleet over its limit asks the store about once per
 * lease, not per request. While the store fails, lease buckets spend what they hold, then
 * the fallback decides per process at the policy: limits keep deciding, and an open
 * breaker costs no 503.
 */
export function createLeasedBuckets(
  settings: LeaseSettings,
  deps: LeasedBucketsDeps,
): RateBucketStore {
  // Oldest first, dropped past maxLeases. Not an LRU: a lookup is on every request, and
  // dropping a lease loses at most what it held, already charged in the store: the fleet then
  // admits less, never more.
  const leases = new Map<string, Lease>();
  const nowUs = deps.nowUs ?? (() => Date.now() * 1000);
  const spanUs = settings.spanMs * 1000;
  const lifeUs = settings.lifeMs * 1000;
  let sharedDownUntilUs = 0;

  const leaseOf = (request: BucketRequest, now: number): Lease => {
    const id = bucketKey(request.bucket);
    let lease = leases.get(id);
    if (lease === undefined) {
      lease = {
        policy: request.policy,
        tokens: 0,
        takenAtUs: now,
        endsAtUs: now,
        demand: 0,
        sharedRemaining: 0,
        sharedWaitUs: 0,
        holdUntilUs: 0,
        retryAtUs: 0,
        pending: undefined,
      };
      if (leases.size >= deps.maxLeases) {
        const oldest = leases.keys().next();
        if (oldest.done !== true) leases.delete(oldest.value);
      }
      leases.set(id, lease);
    }
    if (lease.endsAtUs <= now) lease.tokens = 0;
    return lease;
  };

  /**
   * The next lease: this process's demand over half a lease's life (so it is seldom left to
   * lapse), at most `spanMs` of the bucket's rate (the bound) and its burst.
   */
  const wantOf = (lease: Lease, now: number): number => {
    const { policy } = lease;
    if (policy === undefined) return 1;
    const interval = emissionIntervalUs(policy);
    const cap = Math.max(1, Math.min(policy.burst, Math.floor(spanUs / interval)));
    const elapsed = Math.max(1, now - lease.takenAtUs);
    return Math.min(cap, Math.max(1, Math.ceil((lease.demand * lifeUs) / 2 / elapsed)));
  };

  const plan = (request: BucketRequest, now: number): Plan | Promise<unknown> => {
    if (!isLeased(request)) return { kind: 'exact', request };
    const lease = leaseOf(request, now);
    if (lease.endsAtUs > now && (lease.policy === undefined || lease.tokens >= 1)) {
      lease.demand += 1;
      refillAhead(request, lease, now);
      return { kind: 'local', request, lease };
    }
    if (lease.pending !== undefined) return lease.pending;
    // Counted again after waiting for a take: the take reset the count.
    lease.demand += 1;
    if (lease.holdUntilUs > now) return { kind: 'held', request, lease };
    return { kind: 'lease', request, lease, want: wantOf(lease, now) };
  };

  /**
   * Takes the next lease while a quarter of this one is left, in the background: steady
   * traffic never waits for the store. It asks only for what tops the lease up to the next
   * one's size, so a process never holds more than one lease's worth (the bound).
   */
  const refillAhead = (request: BucketRequest, lease: Lease, now: number): void => {
    if (lease.policy === undefined || lease.pending !== undefined) return;
    if (lease.holdUntilUs > now || now < sharedDownUntilUs) return;
    const left = lease.tokens - 1;
    const want = wantOf(lease, now);
    if (left > Math.floor(want / 4) || want - left < 1) return;
    const count = want - left;
    lease.pending = askShared([{ kind: 'lease', request, lease, want: count }])
      .then(
        (result) => {
          absorb(lease, result.states[0], now, count, 0);
        },
        // The request that finds the lease spent asks again, or falls back.
        () => undefined,
      )
      .finally(() => (lease.pending = undefined));
  };

  /**
   * What the store answered for a lease of `want`, `spent` of it by the request that asked:
   * the rest joins the lease; an emptied bucket is held until the next lease would be there
   * (at most the lease's life, so an override is read again). The wait a refused request
   * may pass after, or 0.
   */
  const absorb = (
    lease: Lease,
    state: BucketState | undefined,
    now: number,
    want: number,
    spent: number,
  ): number => {
    lease.takenAtUs = now;
    lease.endsAtUs = now + lifeUs;
    lease.demand = 0;
    lease.policy = state?.policy;
    if (state === undefined) return 0;
    lease.sharedRemaining = state.remaining;
    lease.sharedWaitUs = state.waitUs;
    if (state.granted > 0) lease.tokens += state.granted - spent;
    if (state.remaining > 0) return 0;
    const { policy } = state;
    const interval = emissionIntervalUs(policy);
    const untilOne =
      state.granted > 0 ? Math.max(0, state.waitUs - (policy.burst - 1) * interval) : state.waitUs;
    lease.retryAtUs = now + untilOne + (Math.min(want, policy.burst) - 1) * interval;
    lease.holdUntilUs = Math.min(lease.retryAtUs, now + lifeUs);
    return state.enforced && state.granted === 0 ? lease.retryAtUs - now : 0;
  };

  const take = (buckets: readonly BucketRequest[]): TakeResult | Promise<TakeResult> => {
    const now = nowUs();
    const plans: Plan[] = [];
    for (const request of buckets) {
      const step = plan(request, now);
      // Another request is taking this bucket's lease: decide once it is back.
      if (step instanceof Promise) return step.then(() => take(buckets));
      plans.push(step);
    }
    if (plans.some((p) => p.kind === 'held' && p.request.enforce !== false))
      return refusedHere(plans, now);
    const asked = plans.filter((p) => p.kind === 'exact' || p.kind === 'lease');
    if (asked.length === 0) return spend(plans, undefined, now);
    const onlyLeases = asked.every((p) => p.kind === 'lease');
    if (onlyLeases && now < sharedDownUntilUs) return fallback(plans, asked, now);
    const answered = askShared(asked).then(
      (result) => settle(plans, asked, result, now),
      (error: unknown) => {
        if (!onlyLeases) throw error;
        deps.onFallback(error);
        sharedDownUntilUs = nowUs() + RETRY_SHARED_AFTER_US;
        return fallback(plans, asked, now);
      },
    );
    for (const p of asked) if (p.kind === 'lease') p.lease.pending = answered;
    return answered.finally(() => {
      for (const p of asked) if (p.kind === 'lease') p.lease.pending = undefined;
    });
  };

  const askShared = async (asked: readonly Plan[]): Promise<TakeResult> =>
    deps.shared.take({
      buckets: asked.map((p) => (p.kind === 'lease' ? { ...p.request, count: p.want } : p.request)),
    });

  /** The shared store answered: leases refilled (or held), and the request decided. */
  const settle = (
    plans: readonly Plan[],
    asked: readonly Plan[],
    result: TakeResult,
    now: number,
  ): TakeResult => {
    const sharedStates = new Map<Plan, BucketState>();
    for (const state of result.states) {
      const p = asked[state.index];
      if (p !== undefined) sharedStates.set(p, state);
    }
    let retryAfterUs = result.retryAfterUs;
    for (const p of asked) {
      if (p.kind !== 'lease') continue;
      // This request spends one of what was granted; the rest is the lease.
      const wait = absorb(p.lease, sharedStates.get(p), now, p.want, 1);
      retryAfterUs = Math.max(retryAfterUs, wait);
    }
    return decided(plans, asked, result, retryAfterUs, now);
  };

  /** The store cannot answer: this process decides its lease buckets alone, at the policy. */
  const fallback = async (
    plans: readonly Plan[],
    asked: readonly Plan[],
    now: number,
  ): Promise<TakeResult> => {
    // Only lease buckets come here: the last policy a lease read (an override's) applies.
    const result = await deps.fallback.take({
      buckets: asked.map((p) =>
        p.kind === 'lease'
          ? { ...p.request, policy: p.lease.policy ?? p.request.policy }
          : p.request,
      ),
    });
    return decided(plans, asked, result, result.retryAfterUs, now);
  };

  return {
    take: ({ buckets }) => (buckets.some(isLeased) ? take(buckets) : deps.shared.take({ buckets })),
  };
}

const indexOf = (plans: readonly Plan[], p: Plan | undefined): number =>
  p === undefined ? -1 : plans.indexOf(p);

/** The answer for the buckets `asked` (the store's or the fallback's), with those decided here. */
function decided(
  plans: readonly Plan[],
  asked: readonly Plan[],
  result: TakeResult,
  retryAfterUs: number,
  now: number,
): TakeResult {
  const states = result.states.map((s) => ({ ...s, index: indexOf(plans, asked[s.index]) }));
  if (result.allowed) return spend(plans, { ...result, states }, now);
  return {
    allowed: false,
    retryAfterUs,
    states: merge(states, localStates(plans, now, false)),
    ...(result.malformedOverrides === undefined
      ? {}
      : { malformedOverrides: result.malformedOverrides }),
  };
}

/** The request passes: one request spent from each local lease. */
function spend(plans: readonly Plan[], asked: TakeResult | undefined, now: number): TakeResult {
  for (const p of plans)
    if (p.kind === 'local' && p.lease.policy !== undefined) p.lease.tokens -= 1;
  return {
    allowed: true,
    retryAfterUs: 0,
    states:
      asked === undefined
        ? localStates(plans, now, true)
        : merge(asked.states, localStates(plans, now, true)),
    ...(asked?.malformedOverrides === undefined
      ? {}
      : { malformedOverrides: asked.malformedOverrides }),
  };
}

/** Refused without asking the store: a bucket of the request is held after a refusal. */
function refusedHere(plans: readonly Plan[], now: number): TakeResult {
  let retryAfterUs = 0;
  for (const p of plans)
    if (p.kind === 'held' && p.request.enforce !== false)
      retryAfterUs = Math.max(retryAfterUs, p.lease.retryAtUs - now);
  return { allowed: false, retryAfterUs, states: localStates(plans, now, false, true) };
}

/**
 * The buckets decided here (spent from a lease, or held), as the store would report them;
 * with `unasked`, also those the store was not asked about, as it last reported them.
 */
function localStates(
  plans: readonly Plan[],
  now: number,
  allowed: boolean,
  unasked = false,
): BucketState[] {
  const states: BucketState[] = [];
  plans.forEach((p, index) => {
    if (p.kind === 'exact' || (p.kind === 'lease' && !unasked)) return;
    const { lease, request } = p;
    const { policy } = lease;
    if (policy === undefined) return;
    const held = p.kind === 'held';
    const elapsed = now - lease.takenAtUs;
    states.push({
      index,
      name: request.bucket.kind,
      enforced: request.enforce !== false,
      granted: allowed && p.kind === 'local' ? 1 : 0,
      policy,
      remaining: held ? 0 : lease.tokens + lease.sharedRemaining,
      waitUs: held ? lease.retryAtUs - now : Math.max(0, lease.sharedWaitUs - elapsed),
    });
  });
  return states;
}

const merge = (a: readonly BucketState[], b: readonly BucketState[]): BucketState[] =>
  [...a, ...b].sort((x, y) => x.index - y.index);

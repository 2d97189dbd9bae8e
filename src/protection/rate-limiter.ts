import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors/gateway-error.js';
import type { Identity } from '../identity/identity.js';
import { createLeasedBuckets, type LeaseSettings } from './leased-buckets.js';
import type { RateLimit, RateLimitMode, RatePolicy } from './rate-policy.js';
import type {
  BucketId,
  BucketOwner,
  BucketRequest,
  BucketState,
  MalformedOverride,
  PolicyName,
  RateBucketStore,
  TakeRequest,
  TakeResult,
} from './rate-bucket-store.js';

export interface RateLimitSettings {
  /** Per credential (the key for Basic, the subject for Bearer), on every authenticated route. */
  readonly credential: RateLimit | undefined;
  /** Per subject, across all its pairs and tokens, on every authenticated route. */
  readonly subject: RateLimit | undefined;
  /** Per client address, on the routes that take no credentials. */
  readonly address: RateLimit | undefined;
  readonly onStoreError: 'open' | 'closed';
  readonly storeErrorLogIntervalSec: number;
}

/** A checked request: the two IETF header values, and whether it may go on. */
export interface RateVerdict {
  readonly allowed: boolean;
  /** Whole seconds, rounded up; meaningful when refused. */
  readonly retryAfterSec: number;
  /** The policy that refused (the first one when several did). */
  readonly refusedBy: PolicyName | undefined;
  /** A shadow limit that would have refused this request (which went on). */
  readonly shadowRefusedBy: PolicyName | undefined;
  /**
   * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11) of the
   * enforced limits; empty when only shadow limits were checked.
   */
  readonly policyHeader: string;
  readonly limitHeader: string;
}

/** Undefined: nothing was checked (no policy applies, or the store failed open). */
export type RateCheck = RateVerdict | undefined | Promise<RateVerdict | undefined>;

export interface RateLimiter {
  /** An authenticated request on `route`, with the route's own policy if it has one. */
  checkCredential(route: string, routePolicy: RateLimit | undefined, identity: Identity): RateCheck;
  /** A request on a route that takes no credentials, by its client network. */
  checkAddress(network: string): RateCheck;
}

export interface RateLimiterDeps {
  readonly store: RateBucketStore;
  /** Every store failure, counted (a metric). */
  readonly countStoreError: () => void;
  /** At most once per storeErrorLogIntervalSec: how many failures since the last warning. */
  readonly warnStoreError: (failures: number, error: GatewayError) => void;
  /** Once per hash and value: a `rate_limit` override in no form the gateway reads. */
  readonly warnMalformedOverride: (override: MalformedOverride) => void;
  /** The store is shared by other processes (Redis): lease-mode buckets are spent from leases. */
  readonly leases?: LeaseDeps | undefined;
  readonly now?: () => number;
}

export interface LeaseDeps {
  readonly settings: LeaseSettings;
  /** Decides lease buckets in process while the store fails. */
  readonly fallback: RateBucketStore;
  readonly maxLeases: number;
  readonly nowUs?: () => number;
}

/** How long a fail-closed 503 asks the client to wait when the store's error names no wait. */
const STORE_ERROR_RETRY_AFTER_SEC = 1;

/** Malformed overrides remembered as reported (the oldest forgotten beyond). */
const MAX_REPORTED_OVERRIDES = 10_000;

/** True when the settings or any route ask for a limit: otherwise the gateway checks nothing. */
export function rateLimitsEnabled(
  settings: RateLimitSettings,
  routePolicies: readonly (RateLimit | undefined)[],
): boolean {
  return (
    settings.credential !== undefined ||
    settings.subject !== undefined ||
    settings.address !== undefined ||
    routePolicies.some((p) => p !== undefined)
  );
}

export function createRateLimiter(settings: RateLimitSettings, deps: RateLimiterDeps): RateLimiter {
  const report = storeFailureReporter(settings, deps);
  const failed = (error: unknown): undefined => {
    const failure = report(error);
    if (settings.onStoreError === 'closed') {
      // The store's own wait when it gave one (a breaker's, until its next probe).
      throw new GatewayError('credential_store_unavailable', {
        cause: failure,
        retryAfterSec: failure.retryAfterSec ?? STORE_ERROR_RETRY_AFTER_SEC,
      });
    }
    return undefined;
  };
  const decide = overrideReporter(deps);
  const store =
    deps.leases === undefined
      ? deps.store
      : createLeasedBuckets(deps.leases.settings, {
          shared: deps.store,
          fallback: deps.leases.fallback,
          onFallback: report,
          maxLeases: deps.leases.maxLeases,
          ...(deps.leases.nowUs === undefined ? {} : { nowUs: deps.leases.nowUs }),
        });
  const take = (request: TakeRequest): RateCheck => {
    let result: TakeResult | Promise<TakeResult>;
    try {
      result = store.take(request);
    } catch (error) {
      return failed(error);
    }
    return result instanceof Promise ? result.then(decide, failed) : decide(result);
  };

  const limits = limitsOf(settings);
  return {
    checkCredential(route, routePolicy, identity) {
      if (
        settings.credential === undefined &&
        settings.subject === undefined &&
        routePolicy === undefined
      )
        return undefined;
      return take({ buckets: credentialBuckets(limits, route, routePolicy, identity) });
    },
    checkAddress(network) {
      if (settings.address === undefined) return undefined;
      return take({ buckets: [bucketRequest({ kind: 'address', network }, limits.address)] });
    },
  };
}

/** A bucket's policy, mode and enforcement (a shadow limit's: none); every field present. */
interface Limit {
  readonly policy: RatePolicy | undefined;
  readonly mode: RateLimitMode | undefined;
  readonly enforce: boolean;
}

/**
 * A bucket's request, every field present in one order: the lease layer reads these on every
 * request, and objects of one shape keep its property reads monomorphic.
 */
const bucketRequest = (bucket: BucketId, limit: Limit, override?: BucketOwner): BucketRequest => ({
  bucket,
  policy: limit.policy,
  mode: limit.mode,
  enforce: limit.enforce,
  override,
});

/** Each bucket's policy, mode and enforcement, made once per limiter, not per request. */
interface Limits {
  readonly credential: Limit;
  readonly subject: Limit;
  readonly address: Limit;
  /** A route's own limit, by the configured object. */
  readonly route: (limit: RateLimit) => Limit;
}

function limitsOf(settings: RateLimitSettings): Limits {
  const routes = new WeakMap<RateLimit, Limit>();
  return {
    credential: limitOf(settings.credential),
    // A bucket only an override limits is read in the credential limit's mode: an exact
    // credential limit keeps every request exact, a lease one asks Redis once per lease.
    subject: limitOf(settings.subject, settings.credential?.mode),
    address: limitOf(settings.address),
    route: (limit) => {
      let made = routes.get(limit);
      if (made === undefined) routes.set(limit, (made = limitOf(limit)));
      return made;
    },
  };
}

/**
 * A store failure, counted and warned of at most once per interval (with how many there were
 * since the last warning), as a GatewayError.
 */
function storeFailureReporter(
  settings: RateLimitSettings,
  deps: RateLimiterDeps,
): (error: unknown) => GatewayError {
  const now = deps.now ?? Date.now;
  const logIntervalMs = settings.storeErrorLogIntervalSec * 1000;
  let lastWarnAt = -Infinity;
  let unreported = 0;
  return (error) => {
    const failure =
      error instanceof GatewayError
        ? error
        : new GatewayError('credential_store_unavailable', { cause: error });
    deps.countStoreError();
    unreported += 1;
    if (now() - lastWarnAt >= logIntervalMs) {
      lastWarnAt = now();
      deps.warnStoreError(unreported, failure);
      unreported = 0;
    }
    return failure;
  };
}

/**
 * A configured limit as a bucket's policy, mode and enforcement (a shadow limit's: none). A
 * bucket no limit is configured for counts only when an override gives it a policy: in
 * `modeWithout`.
 */
function limitOf(limit: RateLimit | undefined, modeWithout?: RateLimitMode): Limit {
  if (limit === undefined) return { policy: undefined, mode: modeWithout, enforce: true };
  const { requests, periodSec, burst, mode, shadow } = limit;
  return { policy: { requests, periodSec, burst }, mode, enforce: !shadow };
}

/** The store's result as a verdict, its malformed overrides warned of once each. */
function overrideReporter(deps: RateLimiterDeps): (result: TakeResult) => RateVerdict | undefined {
  // Every request reads the override again, so a value is reported once, not per request.
  const reported = new LRUCache<string, true>({ max: MAX_REPORTED_OVERRIDES });
  return (result) => {
    for (const override of result.malformedOverrides ?? []) {
      const id = `${override.key}\n${override.value}`;
      if (reported.has(id)) continue;
      reported.set(id, true);
      deps.warnMalformedOverride(override);
    }
    return toVerdict(result);
  };
}

/** The buckets an authenticated request takes from: its credential's, its subject's, its route's. */
function credentialBuckets(
  limits: Limits,
  route: string,
  routePolicy: RateLimit | undefined,
  identity: Identity,
): BucketRequest[] {
  const subject = { kind: 'subject', subject: identity.subject } as const;
  const own: BucketOwner =
    identity.method === 'basic' && identity.key !== undefined
      ? { kind: 'key', key: identity.key, subject: identity.subject }
      : subject;
  // A key's `rate_limit` overrides its own bucket; a subject's overrides the subject-wide
  // bucket, and the credential bucket of its tokens (for Bearer the subject is the
  // credential), never each pair's: that would multiply the subject's budget by its pairs.
  const buckets: BucketRequest[] = [
    bucketRequest({ kind: 'credential', owner: own }, limits.credential, own),
    bucketRequest(subject, limits.subject, subject),
  ];
  if (routePolicy !== undefined)
    buckets.push(bucketRequest({ kind: 'route', route, owner: own }, limits.route(routePolicy)));
  return buckets;
}

function toVerdict(result: TakeResult): RateVerdict | undefined {
  let enforced = 0;
  let refusedBy: PolicyName | undefined;
  let shadowRefusedBy: PolicyName | undefined;
  for (const s of result.states) {
    // A bucket that refused has nothing left; one that would have admitted has at least one.
    const refusing = s.granted === 0 && s.remaining === 0;
    if (s.enforced) {
      enforced += 1;
      if (refusing && !result.allowed) refusedBy ??= s.name;
    } else if (refusing) shadowRefusedBy ??= s.name;
  }
  if (enforced === 0 && shadowRefusedBy === undefined) return undefined;
  const states =
    enforced === result.states.length ? result.states : result.states.filter((s) => s.enforced);
  return {
    allowed: result.allowed,
    retryAfterSec: Math.max(1, Math.ceil(result.retryAfterUs / 1_000_000)),
    refusedBy,
    shadowRefusedBy,
    policyHeader: formatPolicyHeader(states),
    limitHeader: formatLimitHeader(states),
  };
}

/** Each policy's item of `RateLimit-Policy`, made once per policy object and name. */
const policyItems = new WeakMap<RatePolicy, { readonly name: PolicyName; readonly item: string }>();

function policyItem(state: BucketState): string {
  const made = policyItems.get(state.policy);
  if (made?.name === state.name) return made.item;
  const item = `"${state.name}";q=${state.policy.requests};w=${state.policy.periodSec}`;
  policyItems.set(state.policy, { name: state.name, item });
  return item;
}

const limitItem = (s: BucketState): string =>
  `"${s.name}";r=${s.remaining};t=${Math.ceil(s.waitUs / 1_000_000)}`;

/**
 * `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-11 §3): a Structured Fields list
 * of one item per policy, its name a String, `q` the quota and `w` the window in seconds.
 */
export function formatPolicyHeader(states: readonly BucketState[]): string {
  const [only] = states;
  return states.length === 1 && only !== undefined
    ? policyItem(only)
    : states.map(policyItem).join(', ');
}

/**
 * `RateLimit` (§4): per policy, `r` the requests that may pass now and `t` the seconds until
 * the quota is full again; on a refusal `r=0` and `t` is the wait before one passes (as
 * Retry-After, which §6 says must not come before the end of that window).
 */
export function formatLimitHeader(states: readonly BucketState[]): string {
  const [only] = states;
  return states.length === 1 && only !== undefined
    ? limitItem(only)
    : states.map(limitItem).join(', ');
}

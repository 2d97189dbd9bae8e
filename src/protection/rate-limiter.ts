import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors/gateway-error.js';
import type { Identity } from '../identity/identity.js';
import type { RatePolicy } from './rate-policy.js';
import type {
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
  readonly credential: RatePolicy | undefined;
  /** Per subject, across all its pairs and tokens, on every authenticated route. */
  readonly subject: RatePolicy | undefined;
  /** Per client address, on the routes that take no credentials. */
  readonly address: RatePolicy | undefined;
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
  /** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11). */
  readonly policyHeader: string;
  readonly limitHeader: string;
}

/** Undefined: nothing was checked (no policy applies, or the store failed open). */
export type RateCheck = RateVerdict | undefined | Promise<RateVerdict | undefined>;

export interface RateLimiter {
  /** An authenticated request on `route`, with the route's own policy if it has one. */
  checkCredential(
    route: string,
    routePolicy: RatePolicy | undefined,
    identity: Identity,
  ): RateCheck;
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
  readonly now?: () => number;
}

/** How long a fail-closed 503 asks the client to wait when the store's error names no wait. */
const STORE_ERROR_RETRY_AFTER_SEC = 1;

/** Malformed overrides remembered as reported (the oldest forgotten beyond). */
const MAX_REPORTED_OVERRIDES = 10_000;

/** True when the settings or any route ask for a limit: otherwise the gateway checks nothing. */
export function rateLimitsEnabled(
  settings: RateLimitSettings,
  routePolicies: readonly (RatePolicy | undefined)[],
): boolean {
  return (
    settings.credential !== undefined ||
    settings.subject !== undefined ||
    settings.address !== undefined ||
    routePolicies.some((p) => p !== undefined)
  );
}

export function createRateLimiter(settings: RateLimitSettings, deps: RateLimiterDeps): RateLimiter {
  const failed = storeFailureHandler(settings, deps);
  const decide = overrideReporter(deps);
  const take = (request: TakeRequest): RateCheck => {
    let result: TakeResult | Promise<TakeResult>;
    try {
      result = deps.store.take(request);
    } catch (error) {
      return failed(error);
    }
    return result instanceof Promise ? result.then(decide, failed) : decide(result);
  };

  return {
    checkCredential(route, routePolicy, identity) {
      if (
        settings.credential === undefined &&
        settings.subject === undefined &&
        routePolicy === undefined
      )
        return undefined;
      return take({ buckets: credentialBuckets(settings, route, routePolicy, identity) });
    },
    checkAddress(network) {
      if (settings.address === undefined) return undefined;
      return take({
        buckets: [{ bucket: { kind: 'address', network }, policy: settings.address }],
      });
    },
  };
}

/**
 * A store failure: counted, warned of at most once per interval, then the request goes on
 * unchecked (`open`) or is refused with a 503 (`closed`).
 */
function storeFailureHandler(
  settings: RateLimitSettings,
  deps: RateLimiterDeps,
): (error: unknown) => undefined {
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
    if (settings.onStoreError === 'closed') {
      // The store's own wait when it gave one (a breaker's, until its next probe).
      throw new GatewayError('credential_store_unavailable', {
        cause: failure,
        retryAfterSec: failure.retryAfterSec ?? STORE_ERROR_RETRY_AFTER_SEC,
      });
    }
    return undefined;
  };
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
  settings: RateLimitSettings,
  route: string,
  routePolicy: RatePolicy | undefined,
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
    { bucket: { kind: 'credential', owner: own }, policy: settings.credential, override: own },
    {
      bucket: { kind: 'subject', subject: identity.subject },
      policy: settings.subject,
      override: subject,
    },
  ];
  if (routePolicy !== undefined)
    buckets.push({ bucket: { kind: 'route', route, owner: own }, policy: routePolicy });
  return buckets;
}

function toVerdict(result: TakeResult): RateVerdict | undefined {
  if (result.states.length === 0) return undefined;
  // A bucket that refused has nothing left; one that would have admitted has at least one.
  const refused = result.allowed ? undefined : result.states.find((s) => s.remaining === 0);
  return {
    allowed: result.allowed,
    retryAfterSec: Math.max(1, Math.ceil(result.retryAfterUs / 1_000_000)),
    refusedBy: refused?.name,
    policyHeader: formatPolicyHeader(result.states),
    limitHeader: formatLimitHeader(result.states),
  };
}

/**
 * `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-11 §3): a Structured Fields list
 * of one item per policy, its name a String, `q` the quota and `w` the window in seconds.
 */
export function formatPolicyHeader(states: readonly BucketState[]): string {
  return states.map((s) => `"${s.name}";q=${s.policy.requests};w=${s.policy.periodSec}`).join(', ');
}

/**
 * `RateLimit` (§4): per policy, `r` the requests that may pass now and `t` the seconds until
 * the quota is full again; on a refusal `r=0` and `t` is the wait before one passes (as
 * Retry-After, which §6 says must not come before the end of that window).
 */
export function formatLimitHeader(states: readonly BucketState[]): string {
  return states
    .map((s) => `"${s.name}";r=${s.remaining};t=${Math.ceil(s.waitUs / 1_000_000)}`)
    .join(', ');
}

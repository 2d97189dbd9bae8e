import type { GatewayConfig, RatePolicyConfig } from '../config/config-schema.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { MalformedOverride, RateBucketStore } from './rate-bucket-store.js';
import { createLocalBucketStore } from './local-buckets.js';
import type { RateLimit } from './rate-policy.js';
import { createRateLimiter, rateLimitsEnabled, type RateLimiter } from './rate-limiter.js';

/** A configured limit with its burst resolved (by default, a whole period's requests). */
export function toRatePolicy(config: RatePolicyConfig | undefined): RateLimit | undefined {
  return config === undefined
    ? undefined
    : {
        requests: config.requests,
        periodSec: config.periodSec,
        burst: config.burst ?? config.requests,
        mode: config.mode,
        shadow: config.shadow,
      };
}

export interface ConfiguredRateLimiterDeps {
  /** Makes the buckets (the backend's), once limits are on. */
  readonly buckets: (options: { maxTrackedBuckets: number }) => RateBucketStore;
  readonly countStoreError: () => void;
  readonly warnStoreError: (failures: number, error: GatewayError) => void;
  readonly warnMalformedOverride: (override: MalformedOverride) => void;
}

/**
 * The limiter the configuration asks for, or undefined when it sets no policy at all (then
 * the request path does not check anything). The buckets are the backend's: in Redis, shared
 * by every instance, or in process.
 */
export function createConfiguredRateLimiter(
  config: GatewayConfig,
  deps: ConfiguredRateLimiterDeps,
): RateLimiter | undefined {
  const settings = {
    credential: toRatePolicy(config.rateLimits.credential),
    subject: toRatePolicy(config.rateLimits.subject),
    address: toRatePolicy(config.rateLimits.address),
    onStoreError: config.rateLimits.onStoreError,
    storeErrorLogIntervalSec: config.rateLimits.storeErrorLogIntervalSec,
  };
  const routes = config.routes.map((r) => toRatePolicy(r.rateLimit));
  if (!rateLimitsEnabled(settings, routes)) return undefined;
  const { maxTrackedBuckets, lease } = config.rateLimits;
  const store = deps.buckets({ maxTrackedBuckets });
  return createRateLimiter(settings, {
    store,
    countStoreError: deps.countStoreError,
    warnStoreError: deps.warnStoreError,
    warnMalformedOverride: deps.warnMalformedOverride,
    leases:
      store.shared === true
        ? {
            settings: lease,
            fallback: createLocalBucketStore({ maxBuckets: maxTrackedBuckets }),
            maxLeases: maxTrackedBuckets,
          }
        : undefined,
  });
}

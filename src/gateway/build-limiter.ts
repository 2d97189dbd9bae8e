import type { GatewayConfig } from '../config/config-schema.js';
import { describeFailure } from '../errors/describe-failure.js';
import { createConfiguredRateLimiter } from '../protection/configured-rate-limiter.js';
import type { RateLimiter } from '../protection/rate-limiter.js';
import type { ChainDeps } from './chain-deps.js';

/** The rate limits of the configuration, their buckets in the backend. */
export function buildLimiter(config: GatewayConfig, deps: ChainDeps): RateLimiter | undefined {
  return createConfiguredRateLimiter(config, {
    buckets: (options) => deps.backend.buckets(options),
    countStoreError: () => deps.metrics.countRateLimitStoreError(),
    warnStoreError: (failures, error) =>
      deps.logger.warn(
        { failures, onStoreError: config.rateLimits.onStoreError, cause: describeFailure(error) },
        'rate limit store unavailable',
      ),
    // The value is the operator's or web application's, not a secret: shown to be fixed.
    warnMalformedOverride: ({ key, value }) =>
      deps.logger.warn(
        { redis_key: key, value },
        'rate limit override ignored: not <requests>/<periodSec>[,<burst>] or none',
      ),
  });
}

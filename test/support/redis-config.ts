import { redisSchema, type RedisConfig } from '../../src/config/config-schema.js';

/** The RedisConfig a gateway would get from YAML, built by hand for stores made in tests. */
export function redisConfig(url: string, keyPrefix: string): RedisConfig {
  return {
    url,
    mode: 'standalone',
    sentinelName: undefined,
    nodes: [],
    keyPrefix,
    commandTimeoutMs: 300,
    // The schema's defaults, as a file that does not name them gets.
    breaker: redisSchema.shape.breaker.parse(undefined),
  };
}

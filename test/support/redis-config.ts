import type { RedisConfig } from '../../src/config/config-schema.js';

/** The RedisConfig a gateway would get from YAML, built by hand for stores made in tests. */
export function redisConfig(url: string, keyPrefix: string): RedisConfig {
  return {
    url,
    mode: 'standalone',
    sentinelName: undefined,
    nodes: [],
    keyPrefix,
    commandTimeoutMs: 300,
  };
}

import { redisSchema, type RedisConfig } from '../../src/config/config-schema.js';

/**
 * The RedisConfig a gateway would get from YAML, built by hand for stores made in tests; with
 * no single-slot layout to read (YAML's default reads `{ag}:`), unless a test names one.
 */
export function redisConfig(
  url: string,
  keyPrefix: string,
  singleSlotPrefix: string | false = false,
): RedisConfig {
  return {
    url,
    mode: 'standalone',
    sentinelName: undefined,
    nodes: [],
    keyPrefix,
    singleSlotPrefix,
    commandTimeoutMs: 300,
    // The schema's defaults, as a file that does not name them gets.
    breaker: redisSchema.shape.breaker.parse(undefined),
  };
}

/** The RedisConfig of a gateway on the Cluster whose nodes are `seeds` (`host:port`). */
export function redisClusterConfig(
  seeds: readonly string[],
  keyPrefix: string,
  singleSlotPrefix: string | false = false,
): RedisConfig {
  return {
    ...redisConfig('redis://127.0.0.1:6379', keyPrefix, singleSlotPrefix),
    mode: 'cluster',
    nodes: [...seeds],
    // A Cluster client finds its slots on its first command: within a test's time, not a
    // gateway's per-request budget, on two shared cores.
    commandTimeoutMs: 5_000,
  };
}

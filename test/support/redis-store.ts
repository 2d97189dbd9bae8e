import type { RedisConfig } from '../../src/config/config-schema.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import {
  createRedisBackend,
  type RedisBackendOptions,
} from '../../src/backends/redis/redis-backend.js';

/** The credential store of a Redis backend on `config`: what a gateway's store would be. */
export function openRedisStore(
  config: RedisConfig,
  options: RedisBackendOptions = {},
): CredentialStore {
  return createRedisBackend(config, options).credentials;
}

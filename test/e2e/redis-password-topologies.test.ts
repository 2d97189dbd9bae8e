import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { deferred } from '../support/deferred.js';
import { recordingLog } from '../support/recording-log.js';
import { redisClusterConfig, redisConfig } from '../support/redis-config.js';
import { startRedisCluster } from '../support/redis-cluster.js';
import { startRedisSentinels } from '../support/redis-sentinels.js';
import { uniquePrefix } from '../support/seed-redis.js';

// Sentinel and Cluster servers that ask a password (requirepass): the gateway gives the one of
// credentials.redis.url (whose server these modes do not use) to every data node, and to the
// revocation subscription's own connections. A '/' in it is written %2F in the URL.

const PASSWORD = 'topology/s3cret';
const url = (password: string): string => `redis://:${encodeURIComponent(password)}@127.0.0.1:6379`;

interface Topology {
  /** `credentials.redis` on the topology, under a new prefix, with the URL's password. */
  config(password: string): RedisConfig;
  stop(): Promise<void>;
}

function describeWithPassword(label: string, start: () => Promise<Topology>): void {
  describe(`${label} whose servers ask a password`, () => {
    let topology: Topology;
    beforeAll(async () => {
      topology = await start();
    }, 120_000);
    afterAll(() => topology?.stop());

    it('reads, writes and subscribes with the password of credentials.redis.url', async () => {
      const log = recordingLog();
      const backend = createRedisBackend(topology.config(PASSWORD), { log });
      try {
        // SET NX then GET: a write and a read.
        expect(await backend.credentials.fleetKey()).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(await backend.credentials.getKey('ak_nobody')).toBeUndefined();
        const subscribed = deferred<string>();
        backend.credentials.subscribe(
          () => undefined,
          (start) => subscribed.resolve(start),
        );
        expect(await subscribed.promise).toBe('first');
        expect(JSON.stringify(log.lines)).not.toContain('s3cret');
      } finally {
        await backend.credentials.close();
      }
    });

    it('names a wrong password as an authentication failure, without the password', async () => {
      const log = recordingLog();
      const backend = createRedisBackend(topology.config('not-the/s3cret'), { log });
      try {
        expect(await log.until('redis unreachable')).toMatchObject({ reason: 'auth' });
        await expect(backend.credentials.getKey('ak_nobody')).rejects.toMatchObject({
          code: 'credential_store_unavailable',
        });
        expect(JSON.stringify(log.lines)).not.toContain('s3cret');
      } finally {
        await backend.credentials.close();
      }
    });
  });
}

describeWithPassword('a Redis Cluster', async () => {
  const cluster = await startRedisCluster({ password: PASSWORD });
  return {
    config: (password) => ({
      ...redisClusterConfig(cluster.seeds, uniquePrefix('pwc')),
      url: url(password),
    }),
    stop: () => cluster.stop(),
  };
});

describeWithPassword('a Sentinel set', async () => {
  const set = await startRedisSentinels({ password: PASSWORD });
  return {
    config: (password) => ({
      ...redisConfig(url(password), uniquePrefix('pws')),
      mode: 'sentinel',
      nodes: [...set.sentinelAddresses],
      sentinelName: set.name,
      commandTimeoutMs: 5_000,
    }),
    stop: () => set.stop(),
  };
});

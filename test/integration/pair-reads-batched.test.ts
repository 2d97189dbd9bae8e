import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/backends/redis/client.js';
import type { RedisConfig } from '../../src/config/config-schema.js';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';
import { generateKeyPair } from '../../src/credentials/generate-key-pair.js';
import { redisConfig } from '../support/redis-config.js';
import { startRedisSentinels } from '../support/redis-sentinels.js';
import { startLocalRedis } from '../support/redis-server.js';
import { openRedisStore } from '../support/redis-store.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

const pairs = Array.from({ length: 20 }, (_, i) => {
  const subject = `batched-${i}`;
  return { ...generateKeyPair(subject), subject };
});

/** A store on `config` whose client's writes to its (master's) socket are counted. */
interface CountedStore {
  readonly store: CredentialStore;
  readonly writes: () => number;
}

/** The pairs seeded at `url`, and a store on `config` reading them, its writes counted. */
async function countedStore(url: string, config: RedisConfig): Promise<CountedStore> {
  for (const pair of pairs)
    await seedKey(url, config.keyPrefix, { ...pair, secretHash: '$2b$04$batched' });
  const client = createRedisClient(config);
  if (!(client instanceof Redis))
    throw new Error('a non-Cluster configuration makes a Redis client');
  const store = openRedisStore(config, { client });
  let writes = 0;
  try {
    // Connected (on a Sentinel set, to the master the sentinels name), its first commands sent.
    await store.getKey(pairs[0]?.key ?? '');
  } catch (error) {
    await store.close();
    throw error;
  }
  const { stream } = client;
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = (...args: unknown[]) => {
    writes += 1;
    return write(...args);
  };
  return { store, writes: () => writes };
}

/**
 * Every pair asked for from its own callback of one turn, as the requests one poll of the
 * event loop reads do: without auto-pipelining, each callback's command leaves in a write of
 * its own. The writes that took.
 */
async function writesOfOneTurn({ store, writes }: CountedStore): Promise<number> {
  const before = writes();
  const found = await Promise.all(
    pairs.map(
      (pair) =>
        new Promise<KeyRecord | undefined>((resolve, reject) =>
          setImmediate(() => void store.getKey(pair.key).then(resolve, reject)),
        ),
    ),
  );
  expect(found.map((record) => record?.key)).toEqual(pairs.map((pair) => pair.key));
  return writes() - before;
}

/** Where the pairs live: the URL they are seeded at, the store's configuration, its stop. */
interface Topology {
  readonly seedUrl: string;
  readonly config: RedisConfig;
  readonly stop: () => Promise<void>;
}

async function loneRedis(): Promise<Topology> {
  const redis = await startLocalRedis();
  const config = redisConfig(redis.url, uniquePrefix('batched'));
  return { seedUrl: redis.url, config, stop: () => redis.stop() };
}

/** A master, its replica and three sentinels on loopback; the store finds the master through them. */
async function sentinelSet(): Promise<Topology> {
  const sentinels = await startRedisSentinels();
  try {
    const master = await sentinels.master();
    const config: RedisConfig = {
      ...redisConfig('redis://127.0.0.1:6379', uniquePrefix('batched')),
      mode: 'sentinel',
      sentinelName: sentinels.name,
      nodes: [...sentinels.sentinelAddresses],
    };
    return { seedUrl: `redis://${master.address}`, config, stop: () => sentinels.stop() };
  } catch (error) {
    await sentinels.stop();
    throw error;
  }
}

describe.each([
  ['a lone Redis', loneRedis],
  ['the master of a Sentinel set', sentinelSet],
] as const)('the Redis store reading pairs on the request path, on %s', (_where, start) => {
  let topology: Topology | undefined;
  let counted: CountedStore | undefined;
  beforeAll(async () => {
    topology = await start();
    counted = await countedStore(topology.seedUrl, topology.config);
  }, 120_000);
  afterAll(async () => {
    try {
      await counted?.store.close();
    } finally {
      await topology?.stop();
    }
  });

  it('sends the pairs asked for in one turn of the event loop in one write', async () => {
    if (counted === undefined) throw new Error('no store');
    expect(await writesOfOneTurn(counted)).toBe(1);
  });
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../src/backends/redis/client.js';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';
import { generateKeyPair } from '../../src/credentials/generate-key-pair.js';
import { redisConfig } from '../support/redis-config.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { openRedisStore } from '../support/redis-store.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// A Redis of its own, and a client whose socket's writes are counted.
let redis: TestRedis | undefined;
let client: Redis | undefined;
let store: CredentialStore | undefined;
let writes = 0;
const prefix = uniquePrefix('batched');
const pairs = Array.from({ length: 20 }, (_, i) => {
  const subject = `batched-${i}`;
  return { ...generateKeyPair(subject), subject };
});

beforeAll(async () => {
  redis = await startLocalRedis();
  for (const pair of pairs)
    await seedKey(redis.url, prefix, { ...pair, secretHash: '$2b$04$batched' });
  const config = redisConfig(redis.url, prefix);
  const made = createRedisClient(config);
  if (!(made instanceof Redis)) throw new Error('a standalone configuration makes a Redis client');
  client = made;
  store = openRedisStore(config, { client });
  // Connected, and its connection's own first commands sent.
  await store.getKey(pairs[0]?.key ?? '');
  const { stream } = client;
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = (...args: unknown[]) => {
    writes += 1;
    return write(...args);
  };
});

afterAll(async () => {
  try {
    if (store === undefined) client?.disconnect();
    else await store.close();
  } finally {
    await redis?.stop();
  }
});

describe('the Redis store reading pairs on the request path', () => {
  it('sends the pairs asked for in one turn of the event loop in one write (standalone)', async () => {
    const before = writes;
    // As the requests one poll of the event loop reads, each asking from its own callback:
    // without auto-pipelining, each callback's command leaves in a write of its own.
    const found = await Promise.all(
      pairs.map(
        (pair) =>
          new Promise<KeyRecord | undefined>((resolve, reject) =>
            setImmediate(() => void store?.getKey(pair.key).then(resolve, reject)),
          ),
      ),
    );
    const sent = writes - before;
    expect(found.map((record) => record?.key)).toEqual(pairs.map((pair) => pair.key));
    expect(sent).toBe(1);
  });
});

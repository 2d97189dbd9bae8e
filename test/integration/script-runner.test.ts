import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ScriptRunner } from '../../src/credentials/credential-store.js';
import { createRedisStore } from '../../src/credentials/redis-store.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The Redis store's script runner: what rate limits, lockout and last use build on.
const prefix = uniquePrefix('scripts');
const INCR_BY = `return redis.call('INCRBY', KEYS[1], ARGV[1])`;
let admin: Redis;
let store: ReturnType<typeof createRedisStore>;
let scripts: ScriptRunner;

beforeAll(() => {
  admin = new Redis(inject('redisUrl'));
  store = createRedisStore(redisConfig(inject('redisUrl'), prefix));
  if (store.scripts === undefined) throw new Error('the Redis store runs scripts');
  scripts = store.scripts;
});

afterAll(async () => {
  await store.close();
  admin.disconnect();
});

describe('the Redis store runs scripts', () => {
  it('names its key prefix, and runs a script with its keys and arguments', async () => {
    expect(scripts.keyPrefix).toBe(prefix);
    const key = `${prefix}counter`;
    expect(await scripts.run(INCR_BY, [key], [2])).toBe(2);
    expect(await scripts.run(INCR_BY, [key], ['3'])).toBe(5);
  });

  it('sends a script again after Redis forgot it (a restart or failover empties its cache)', async () => {
    const key = `${prefix}after-flush`;
    expect(await scripts.run(INCR_BY, [key], [1])).toBe(1);
    await admin.script('FLUSH');
    expect(await scripts.run(INCR_BY, [key], [1])).toBe(2);
  });

  it("rejects with credential_store_unavailable on a script's own error", async () => {
    await expect(scripts.run(`return redis.call('NOSUCHCOMMAND')`, [], [])).rejects.toMatchObject({
      code: 'credential_store_unavailable',
    });
  });
});

import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisStore } from '../../src/credentials/redis-store.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { createMemoryBucketStore } from '../../src/protection/memory-bucket-store.js';
import type { RateBucketStore, TakeResult } from '../../src/protection/rate-bucket-store.js';
import { parseRateLimitOverride } from '../../src/protection/rate-policy.js';
import { createRedisBucketStore } from '../../src/protection/redis-bucket-store.js';
import { redisConfig } from '../support/redis-config.js';
import { freePort } from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The rate-limit buckets, in process and in Redis: one contract for both. The policies have
// long periods, so nothing refills during a test and every count is exact.

const prefix = uniquePrefix('buckets');
let redisStore: ReturnType<typeof createRedisStore>;
let admin: Redis;

beforeAll(() => {
  redisStore = createRedisStore(redisConfig(inject('redisUrl'), prefix));
  admin = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  await redisStore.close();
  admin.disconnect();
});

const HOUR = { requests: 3600, periodSec: 3600 };
let run = 0;
/** A bucket id no other test uses. */
const fresh = (name: string): string => `rl:${name}:${(run += 1)}`;

function bucketStoreContract(name: string, make: () => RateBucketStore): void {
  describe(`the ${name} rate buckets`, () => {
    it('admit the burst, then refuse until one request has been earned back', async () => {
      const store = make();
      const id = fresh('burst');
      const bucket = { name: 'credential', id, policy: { ...HOUR, burst: 3 } } as const;
      const results = [];
      const before = Date.now();
      for (let i = 0; i < 4; i += 1) results.push(await store.take({ buckets: [bucket] }));
      // The store's clock ran at most this long from the first take to the last, however slow
      // the machine (Date.now() truncates to the millisecond: one more).
      const elapsedUs = (Date.now() - before + 1) * 1000;
      expect(results.map((r) => [r.allowed, r.states[0]?.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      // One request per second: the next one passes a second after the first admission.
      const refused = results[3];
      expect(refused?.retryAfterUs).toBeGreaterThanOrEqual(1_000_000 - elapsedUs);
      expect(refused?.retryAfterUs).toBeLessThanOrEqual(1_000_000);
      // Full again three seconds after the first admission.
      expect(results[2]?.states[0]?.waitUs).toBeGreaterThanOrEqual(3_000_000 - elapsedUs);
      expect(results[2]?.states[0]?.waitUs).toBeLessThanOrEqual(3_000_000);
    });

    it('charge every bucket of a request or none: a refusal by one leaves the others as they were', async () => {
      const store = make();
      const wide = {
        name: 'credential',
        id: fresh('wide'),
        policy: { ...HOUR, burst: 5 },
      } as const;
      const narrow = { name: 'route', id: fresh('narrow'), policy: { ...HOUR, burst: 1 } } as const;
      const first = await store.take({ buckets: [wide, narrow] });
      expect(first.allowed).toBe(true);
      for (let i = 0; i < 3; i += 1) {
        const refused = await store.take({ buckets: [wide, narrow] });
        expect([refused.allowed, refused.states.map((s) => [s.name, s.remaining])]).toEqual([
          false,
          [
            ['credential', 4],
            ['route', 0],
          ],
        ]);
      }
      const alone = await store.take({ buckets: [wide] });
      expect([alone.allowed, alone.states[0]?.remaining]).toEqual([true, 3]);
    });

    it('keep one budget per bucket id', async () => {
      const store = make();
      const policy = { ...HOUR, burst: 1 };
      const a = { name: 'address', id: fresh('a'), policy } as const;
      const b = { name: 'address', id: fresh('b'), policy } as const;
      expect((await store.take({ buckets: [a] })).allowed).toBe(true);
      expect((await store.take({ buckets: [a] })).allowed).toBe(false);
      expect((await store.take({ buckets: [b] })).allowed).toBe(true);
    });

    it('count nothing for a bucket without a policy and report only those with one', async () => {
      const store = make();
      const none = { name: 'credential', id: fresh('none'), policy: undefined } as const;
      const route = { name: 'route', id: fresh('route'), policy: { ...HOUR, burst: 2 } } as const;
      const result = await store.take({ buckets: [none, route] });
      expect([result.allowed, result.states.map((s) => s.name)]).toEqual([true, ['route']]);
      const empty = await store.take({ buckets: [none] });
      expect([empty.allowed, empty.states]).toEqual([true, []]);
    });
  });
}

bucketStoreContract('in-process', () => createMemoryBucketStore({ maxBuckets: 1000 }));
bucketStoreContract('Redis', () => {
  if (redisStore.scripts === undefined) throw new Error('the Redis store runs scripts');
  return createRedisBucketStore(redisStore.scripts);
});

describe('the Redis rate buckets', () => {
  const store = (): RateBucketStore => {
    if (redisStore.scripts === undefined) throw new Error('the Redis store runs scripts');
    return createRedisBucketStore(redisStore.scripts);
  };
  const credential = (id: string) =>
    ({ name: 'credential', id, policy: { ...HOUR, burst: 1 } }) as const;

  it('expire a bucket by itself once it is full again', async () => {
    const id = fresh('ttl');
    const result = await store().take({ buckets: [credential(id)] });
    const ttlMs = await admin.pttl(prefix + id);
    expect(ttlMs).toBeGreaterThan(0);
    expect(ttlMs).toBeLessThanOrEqual(Math.ceil((result.states[0]?.waitUs ?? 0) / 1000));
  });

  it('take each bucket’s policy from the hash it names, in the same script, and report a malformed one', async () => {
    const key = `key:ak_override${(run += 1)}`;
    const subject = `subject:override${run}`;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('o')), override: key },
          { name: 'subject', id: fresh('o'), policy: { ...HOUR, burst: 2 }, override: subject },
        ],
      });
    const policies = (result: TakeResult) => result.states.map((s) => [s.name, s.policy]);
    const configured = { ...HOUR, burst: 1 };

    await admin.hset(prefix + subject, 'rate_limit', '100/60,3');
    expect(policies(await take())).toEqual([
      ['credential', configured],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);

    await admin.hset(prefix + key, 'rate_limit', '5/10');
    const byKey = await take();
    expect(policies(byKey)).toEqual([
      ['credential', { requests: 5, periodSec: 10, burst: 5 }],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);
    expect(byKey.states[0]?.remaining).toBe(4);

    await admin.hset(prefix + key, 'rate_limit', 'none');
    expect(policies(await take())).toEqual([
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);

    await admin.hset(prefix + key, 'rate_limit', 'soon');
    const ignored = await take();
    expect(policies(ignored)).toEqual([
      ['credential', configured],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);
    expect(ignored.malformedOverrides).toEqual([{ key: prefix + key, value: 'soon' }]);
  });

  it('read a hash that two buckets name once, and report its malformed value once, cut to 64 characters', async () => {
    const subject = `subject:shared${(run += 1)}`;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('s')), override: subject },
          { name: 'subject', id: fresh('s'), policy: undefined, override: subject },
        ],
      });
    await admin.hset(prefix + subject, 'rate_limit', '3/3600,2');
    const both = await take();
    expect(both.states.map((s) => [s.name, s.remaining])).toEqual([
      ['credential', 1],
      ['subject', 1],
    ]);
    expect(both.malformedOverrides).toBeUndefined();
    await admin.hset(prefix + subject, 'rate_limit', 'x'.repeat(100));
    expect((await take()).malformedOverrides).toEqual([
      { key: prefix + subject, value: 'x'.repeat(64) },
    ]);
  });

  it('read an override exactly as parseRateLimitOverride documents it, and report what it refuses', async () => {
    const key = `${prefix}key:ak_parse`;
    const configured = { requests: 7, periodSec: 7, burst: 7 };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.stringMatching(/^[0-9]{1,11}\/[0-9]{1,9}(,[0-9]{0,11})?$/),
          fc.constantFrom('none', 'None', '', '1/1', '0/1', '1/0', '2/3,0', '10/60 ', 'x'),
        ),
        async (value) => {
          await admin.hset(key, 'rate_limit', value);
          const result = await store().take({
            buckets: [
              { name: 'credential', id: fresh('p'), policy: configured, override: 'key:ak_parse' },
            ],
          });
          const parsed = parseRateLimitOverride(value);
          expect(result.states[0]?.policy).toEqual(
            parsed === 'none' ? undefined : (parsed ?? configured),
          );
          expect(result.malformedOverrides).toEqual(
            parsed === undefined ? [{ key, value }] : undefined,
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reject with credential_store_unavailable when Redis does not answer', async () => {
    const dead = createRedisStore({
      ...redisConfig(`redis://127.0.0.1:${await freePort()}`, prefix),
      commandTimeoutMs: 100,
    });
    try {
      if (dead.scripts === undefined) throw new Error('the Redis store runs scripts');
      const error = await Promise.resolve(
        createRedisBucketStore(dead.scripts).take({
          buckets: [credential(fresh('dead'))],
        }),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe('credential_store_unavailable');
    } finally {
      await dead.close();
    }
  });
});

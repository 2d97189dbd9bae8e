import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type {
  BucketId,
  PolicyName,
  RateBucketStore,
  TakeResult,
} from '../../src/protection/rate-bucket-store.js';
import { parseRateLimitOverride } from '../../src/protection/rate-policy.js';
import { redisConfig } from '../support/redis-config.js';
import { freePort } from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The rate-limit buckets, in process and in Redis: one contract for both. The policies have
// long periods, so nothing refills during a test and every count is exact.

const prefix = uniquePrefix('buckets');
const layout = redisLayout(prefix);
let redisBackend: Backend;
let admin: Redis;

beforeAll(() => {
  redisBackend = createRedisBackend(redisConfig(inject('redisUrl'), prefix));
  admin = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  await redisBackend.credentials.close();
  admin.disconnect();
});

const HOUR = { requests: 3600, periodSec: 3600 };
let run = 0;
/** A bucket of `kind` no other test uses. */
function fresh(kind: PolicyName, name: string): BucketId {
  const id = `${name}${(run += 1)}`;
  switch (kind) {
    case 'credential':
      return { kind, owner: { kind: 'key', key: `ak_${id}` } };
    case 'subject':
      return { kind, subject: id };
    case 'route':
      return { kind, route: id, owner: { kind: 'subject', subject: id } };
    case 'address':
      return { kind, network: id };
  }
}
const TRACKED = { maxTrackedBuckets: 1000 };

function bucketStoreContract(name: string, make: () => RateBucketStore): void {
  describe(`the ${name} rate buckets`, () => {
    it('admit the burst, then refuse until one request has been earned back', async () => {
      const store = make();
      const bucket = { bucket: fresh('credential', 'burst'), policy: { ...HOUR, burst: 3 } };
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
      const wide = { bucket: fresh('credential', 'wide'), policy: { ...HOUR, burst: 5 } };
      const narrow = { bucket: fresh('route', 'narrow'), policy: { ...HOUR, burst: 1 } };
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
      const a = { bucket: fresh('address', 'a'), policy };
      const b = { bucket: fresh('address', 'b'), policy };
      expect((await store.take({ buckets: [a] })).allowed).toBe(true);
      expect((await store.take({ buckets: [a] })).allowed).toBe(false);
      expect((await store.take({ buckets: [b] })).allowed).toBe(true);
    });

    it('count nothing for a bucket without a policy and report only those with one', async () => {
      const store = make();
      const none = { bucket: fresh('credential', 'none'), policy: undefined };
      const route = { bucket: fresh('route', 'route'), policy: { ...HOUR, burst: 2 } };
      const result = await store.take({ buckets: [none, route] });
      expect([result.allowed, result.states.map((s) => s.name)]).toEqual([true, ['route']]);
      const empty = await store.take({ buckets: [none] });
      expect([empty.allowed, empty.states]).toEqual([true, []]);
    });
  });
}

bucketStoreContract('in-process', () => createMemoryBackend().buckets(TRACKED));
bucketStoreContract('Redis', () => redisBackend.buckets(TRACKED));

describe('the Redis rate buckets', () => {
  const store = (): RateBucketStore => redisBackend.buckets(TRACKED);
  const credential = (bucket: BucketId) => ({ bucket, policy: { ...HOUR, burst: 1 } });

  it('expire a bucket by itself once it is full again', async () => {
    const bucket = fresh('credential', 'ttl');
    const result = await store().take({ buckets: [credential(bucket)] });
    const ttlMs = await admin.pttl(layout.bucket(bucket));
    expect(ttlMs).toBeGreaterThan(0);
    expect(ttlMs).toBeLessThanOrEqual(Math.ceil((result.states[0]?.waitUs ?? 0) / 1000));
  });

  it('take each bucket’s policy from the hash it names, in the same script, and report a malformed one', async () => {
    const key = { kind: 'key', key: `ak_override${(run += 1)}` } as const;
    const subject = { kind: 'subject', subject: `override${run}` } as const;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('credential', 'o')), override: key },
          { bucket: fresh('subject', 'o'), policy: { ...HOUR, burst: 2 }, override: subject },
        ],
      });
    const policies = (result: TakeResult) => result.states.map((s) => [s.name, s.policy]);
    const configured = { ...HOUR, burst: 1 };

    await admin.hset(layout.settings(subject), 'rate_limit', '100/60,3');
    expect(policies(await take())).toEqual([
      ['credential', configured],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);

    await admin.hset(layout.settings(key), 'rate_limit', '5/10');
    const byKey = await take();
    expect(policies(byKey)).toEqual([
      ['credential', { requests: 5, periodSec: 10, burst: 5 }],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);
    expect(byKey.states[0]?.remaining).toBe(4);

    await admin.hset(layout.settings(key), 'rate_limit', 'none');
    expect(policies(await take())).toEqual([
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);

    await admin.hset(layout.settings(key), 'rate_limit', 'soon');
    const ignored = await take();
    expect(policies(ignored)).toEqual([
      ['credential', configured],
      ['subject', { requests: 100, periodSec: 60, burst: 3 }],
    ]);
    expect(ignored.malformedOverrides).toEqual([{ key: layout.key(key.key), value: 'soon' }]);
  });

  it('read a hash that two buckets name once, and report its malformed value once, cut to 64 characters', async () => {
    const subject = { kind: 'subject', subject: `shared${(run += 1)}` } as const;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('credential', 's')), override: subject },
          { bucket: fresh('subject', 's'), policy: undefined, override: subject },
        ],
      });
    await admin.hset(layout.settings(subject), 'rate_limit', '3/3600,2');
    const both = await take();
    expect(both.states.map((s) => [s.name, s.remaining])).toEqual([
      ['credential', 1],
      ['subject', 1],
    ]);
    expect(both.malformedOverrides).toBeUndefined();
    await admin.hset(layout.settings(subject), 'rate_limit', 'x'.repeat(100));
    expect((await take()).malformedOverrides).toEqual([
      { key: layout.subject(subject.subject), value: 'x'.repeat(64) },
    ]);
  });

  it('read an override exactly as parseRateLimitOverride documents it, and report what it refuses', async () => {
    const key = layout.key('ak_parse');
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
              {
                bucket: fresh('credential', 'p'),
                policy: configured,
                override: { kind: 'key', key: 'ak_parse' },
              },
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
    const dead = createRedisBackend({
      ...redisConfig(`redis://127.0.0.1:${await freePort()}`, prefix),
      commandTimeoutMs: 100,
    });
    try {
      const error = await Promise.resolve(
        dead.buckets(TRACKED).take({ buckets: [credential(fresh('credential', 'dead'))] }),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe('credential_store_unavailable');
    } finally {
      await dead.credentials.close();
    }
  });
});

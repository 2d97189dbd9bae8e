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
  RateBucketStore,
  TakeResult,
} from '../../src/protection/rate-bucket-store.js';
import { parseRateLimitOverride } from '../../src/protection/rate-policy.js';
import { redisConfig } from '../support/redis-config.js';
import {
  bucketStoreContract,
  fresh,
  HOUR,
  TRACKED,
  unique,
} from '../support/rate-bucket-store-contract.js';
import { freePort } from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The rate-limit buckets, in process and in Redis: one contract for both
// (support/rate-bucket-store-contract.ts), then what only Redis does.

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
    const name = unique('override');
    const key = { kind: 'key', key: `ak_${name}`, subject: name } as const;
    const subject = { kind: 'subject', subject: name } as const;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('credential', 'o', name)), override: key },
          { bucket: fresh('subject', 'o', name), policy: { ...HOUR, burst: 2 }, override: subject },
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
    expect(ignored.malformedOverrides).toEqual([{ key: layout.key(key.key, name), value: 'soon' }]);
  });

  it('read a hash that two buckets name once, and report its malformed value once, cut to 64 characters', async () => {
    const subject = { kind: 'subject', subject: unique('shared') } as const;
    const take = () =>
      store().take({
        buckets: [
          { ...credential(fresh('credential', 's', subject.subject)), override: subject },
          { bucket: fresh('subject', 's', subject.subject), policy: undefined, override: subject },
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
    const key = layout.key('ak_parse', 'parse');
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
                bucket: fresh('credential', 'p', 'parse'),
                policy: configured,
                override: { kind: 'key', key: 'ak_parse', subject: 'parse' },
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

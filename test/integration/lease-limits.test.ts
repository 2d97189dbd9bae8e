import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import type { Identity } from '../../src/identity/identity.js';
import { createLocalBucketStore } from '../../src/protection/local-buckets.js';
import type { RateBucketStore } from '../../src/protection/rate-bucket-store.js';
import type { RateLimit } from '../../src/protection/rate-policy.js';
import {
  createRateLimiter,
  type RateLimiter,
  type RateVerdict,
} from '../../src/protection/rate-limiter.js';
import { redisConfig } from '../support/redis-config.js';
import { unique } from '../support/rate-bucket-store-contract.js';
import { uniquePrefix } from '../support/seed-redis.js';

// Lease-mode limits on a real Redis, from several limiters (processes) at once: what they
// cost Redis, that the script's own clock and overrides drive them, and that Redis's
// answer, not a process's guess, ends a lease. The accuracy under a skewed fleet is read on
// a simulated clock (unit/protection/leased-buckets.test.ts) and in the bench.

const prefix = uniquePrefix('leases');
const layout = redisLayout(prefix);
let backend: Backend;
let admin: Redis;

beforeAll(() => {
  backend = createRedisBackend(redisConfig(inject('redisUrl'), prefix));
  admin = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  await backend.credentials.close();
  admin.disconnect();
});

const quiet = {
  countStoreError: () => undefined,
  warnStoreError: () => undefined,
  warnMalformedOverride: () => undefined,
};

/** A limiter as one process has it, on the shared Redis buckets; `calls` counts its takes. */
function processLimiter(
  credential: RateLimit,
  { lifeMs = 1000, spanMs = 25 }: { lifeMs?: number; spanMs?: number } = {},
): { limiter: RateLimiter; calls: () => number; later: (ms: number) => void } {
  let calls = 0;
  // The process's clock, which a test moves on instead of waiting (Redis keeps its own).
  let aheadUs = 0;
  const redis = backend.buckets({ maxTrackedBuckets: 1000 });
  const counted: RateBucketStore = {
    shared: true,
    take(request) {
      calls += 1;
      return redis.take(request);
    },
  };
  const limiter = createRateLimiter(
    {
      credential,
      subject: undefined,
      address: undefined,
      onStoreError: 'closed',
      storeErrorLogIntervalSec: 60,
    },
    {
      ...quiet,
      store: counted,
      leases: {
        settings: { spanMs, lifeMs },
        fallback: createLocalBucketStore({ maxBuckets: 1000 }),
        maxLeases: 1000,
        nowUs: () => Date.now() * 1000 + aheadUs,
      },
    },
  );
  return { limiter, calls: () => calls, later: (ms) => (aheadUs += ms * 1000) };
}

const limitOf = (
  requests: number,
  periodSec: number,
  burst: number,
  mode: RateLimit['mode'] = 'lease',
): RateLimit => ({ requests, periodSec, burst, mode, shadow: false });

const basicOf = (subject: string): Identity => ({
  subject,
  method: 'basic',
  key: `ak_${subject}`,
  scopes: [],
});

async function check(limiter: RateLimiter, identity: Identity): Promise<RateVerdict | undefined> {
  return limiter.checkCredential('accounts', undefined, identity);
}

describe('lease-mode limits on Redis', () => {
  it('cost two processes sending steadily a small fraction of a script run per request', async () => {
    const identity = basicOf(unique('steady'));
    const limit = limitOf(100_000, 1, 100_000);
    const fleet = [processLimiter(limit), processLimiter(limit)];
    let admitted = 0;
    // 64 requests at a time on each: the way 64 keep-alive connections arrive.
    for (let round = 0; round < 20; round += 1) {
      const verdicts = await Promise.all(
        fleet.flatMap(({ limiter }) => Array.from({ length: 64 }, () => check(limiter, identity))),
      );
      admitted += verdicts.filter((v) => v?.allowed === true).length;
    }
    expect(admitted).toBe(2 * 20 * 64);
    const calls = fleet.reduce((sum, p) => sum + p.calls(), 0);
    expect(calls / admitted).toBeLessThanOrEqual(0.1);
  });

  it('run one script per request in exact mode', async () => {
    const identity = basicOf(unique('exact'));
    const p = processLimiter(limitOf(1000, 1, 1000, 'exact'));
    for (let i = 0; i < 30; i += 1) await check(p.limiter, identity);
    expect(p.calls()).toBe(30);
  });

  it('admit no more than the burst across processes at one moment: every lease is charged in Redis first', async () => {
    const identity = basicOf(unique('burst'));
    // An hour-long period: nothing refills during the test, so every count is exact.
    const limit = limitOf(3600, 3600, 50);
    const fleet = [processLimiter(limit), processLimiter(limit), processLimiter(limit)];
    const verdicts = await Promise.all(
      fleet.flatMap(({ limiter }) => Array.from({ length: 40 }, () => check(limiter, identity))),
    );
    expect(verdicts.filter((v) => v?.allowed === true)).toHaveLength(50);
    const refused = verdicts.find((v) => v?.allowed === false);
    expect(refused).toMatchObject({ refusedBy: 'credential' });
    expect(refused?.retryAfterSec).toBeGreaterThanOrEqual(1);
  });

  it('read a key’s rate_limit override at each lease: a new value holds once the lease has lapsed', async () => {
    const identity = basicOf(unique('override'));
    // A lease of a whole second of the old rate: it leaves the bucket a second in debt, which
    // the new policy's count below reads the same however slowly this test runs.
    const p = processLimiter(limitOf(100_000, 1, 100_000), { lifeMs: 50, spanMs: 1000 });
    expect((await check(p.limiter, identity))?.policyHeader).toBe('"credential";q=100000;w=1');
    await admin.hset(layout.key(identity.key ?? '', identity.subject), 'rate_limit', '3/3600');
    // Spent from the lease the first request took: no script, the old policy.
    expect((await check(p.limiter, identity))?.policyHeader).toBe('"credential";q=100000;w=1');
    expect(p.calls()).toBe(1);
    // Once the lease's life (50 ms) is over, the next request takes a lease and reads it.
    p.later(50);
    const after = [];
    for (let i = 0; i < 3; i += 1) after.push((await check(p.limiter, identity))?.allowed);
    // The first lease took a second of the old rate from the bucket, a part of one request
    // of the new one: two of the three are left.
    expect(after).toEqual([true, true, false]);
  });

  it('keep deciding in process while Redis cannot answer, failing closed or not: no 503', async () => {
    const identity = basicOf(unique('outage'));
    let failing = false;
    const redis = backend.buckets({ maxTrackedBuckets: 1000 });
    const failures: unknown[] = [];
    const limiter = createRateLimiter(
      {
        credential: limitOf(3600, 3600, 3),
        subject: undefined,
        address: undefined,
        onStoreError: 'closed',
        storeErrorLogIntervalSec: 60,
      },
      {
        ...quiet,
        countStoreError: () => failures.push('counted'),
        store: {
          shared: true,
          take: (request) =>
            failing ? Promise.reject(new Error('connection lost')) : redis.take(request),
        },
        leases: {
          settings: { spanMs: 25, lifeMs: 1000 },
          fallback: createLocalBucketStore({ maxBuckets: 1000 }),
          maxLeases: 1000,
        },
      },
    );
    expect((await check(limiter, identity))?.allowed).toBe(true);
    failing = true;
    const during = [];
    for (let i = 0; i < 4; i += 1) during.push((await check(limiter, identity))?.allowed);
    // The fallback starts full (a burst of 3) and refuses past it; the failure is counted once:
    // Redis is asked again a second later, not per request.
    expect(during).toEqual([true, true, true, false]);
    expect(failures).toEqual(['counted']);
  });
});

import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { Identity } from '../../../src/identity/identity.js';
import { createMemoryBucketStore } from '../../../src/protection/memory-bucket-store.js';
import type { RateBucketStore, TakeRequest } from '../../../src/protection/rate-bucket-store.js';
import {
  createRateLimiter,
  formatLimitHeader,
  formatPolicyHeader,
  rateLimitsEnabled,
  type RateLimitSettings,
  type RateVerdict,
} from '../../../src/protection/rate-limiter.js';

const basic: Identity = { subject: 'alice', method: 'basic', key: 'ak_alice1', scopes: [] };
const bearer: Identity = { subject: 'alice', method: 'bearer', source: 'gateway', scopes: [] };
const settings: RateLimitSettings = {
  credential: { requests: 2, periodSec: 60, burst: 2 },
  address: { requests: 1, periodSec: 10, burst: 1 },
  onStoreError: 'open',
  storeErrorLogIntervalSec: 60,
};

function recording(): { store: RateBucketStore; requests: TakeRequest[] } {
  const requests: TakeRequest[] = [];
  const inner = createMemoryBucketStore({ maxBuckets: 100, nowUs: () => 0 });
  return {
    requests,
    store: {
      take(request) {
        requests.push(request);
        return inner.take(request);
      },
    },
  };
}

const quiet = { countStoreError: () => undefined, warnStoreError: () => undefined };

describe('the IETF headers (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('list one item per policy: q and w in RateLimit-Policy, r and t in RateLimit', () => {
    const states = [
      {
        name: 'credential',
        policy: { requests: 600, periodSec: 60, burst: 100 },
        remaining: 99,
        waitUs: 100_001,
      },
      {
        name: 'route',
        policy: { requests: 10, periodSec: 1, burst: 10 },
        remaining: 0,
        waitUs: 2_000_000,
      },
    ] as const;
    expect(formatPolicyHeader(states)).toBe('"credential";q=600;w=60, "route";q=10;w=1');
    expect(formatLimitHeader(states)).toBe('"credential";r=99;t=1, "route";r=0;t=2');
  });
});

describe('the rate limiter', () => {
  it('is off when no policy is set anywhere', () => {
    const none = { ...settings, credential: undefined, address: undefined };
    expect(rateLimitsEnabled(none, [undefined])).toBe(false);
    expect(rateLimitsEnabled(none, [{ requests: 1, periodSec: 1, burst: 1 }])).toBe(true);
    expect(rateLimitsEnabled(settings, [])).toBe(true);
  });

  it('counts Basic per key and Bearer per subject, reading the key then the subject override', () => {
    const { store, requests } = recording();
    const limiter = createRateLimiter(settings, { store, ...quiet });
    void limiter.checkCredential('accounts', undefined, basic);
    void limiter.checkCredential('accounts', { requests: 5, periodSec: 1, burst: 5 }, bearer);
    expect(requests).toEqual([
      {
        buckets: [{ name: 'credential', id: 'rl:key:ak_alice1', policy: settings.credential }],
        overrides: ['key:ak_alice1', 'subject:alice'],
      },
      {
        buckets: [
          { name: 'credential', id: 'rl:subject:alice', policy: settings.credential },
          {
            name: 'route',
            id: 'rl:route:accounts:subject:alice',
            policy: { requests: 5, periodSec: 1, burst: 5 },
          },
        ],
        overrides: ['subject:alice'],
      },
    ]);
  });

  it('checks nothing on a route without a policy when no credential policy is set', () => {
    const { store, requests } = recording();
    const limiter = createRateLimiter({ ...settings, credential: undefined }, { store, ...quiet });
    expect(limiter.checkCredential('accounts', undefined, basic)).toBeUndefined();
    expect(requests).toEqual([]);
  });

  it('refuses past the burst with a whole-second Retry-After and names the policy', () => {
    const { store } = recording();
    const limiter = createRateLimiter(settings, { store, ...quiet });
    const verdicts = [1, 2, 3].map(
      () => limiter.checkCredential('accounts', undefined, basic) as RateVerdict,
    );
    expect(verdicts.map((v) => [v.allowed, v.limitHeader])).toEqual([
      [true, '"credential";r=1;t=30'],
      [true, '"credential";r=0;t=60'],
      [false, '"credential";r=0;t=30'],
    ]);
    expect(verdicts[2]).toMatchObject({ retryAfterSec: 30, refusedBy: 'credential' });
    expect(verdicts[2]?.policyHeader).toBe('"credential";q=2;w=60');
  });

  it('limits requests without credentials per client address', () => {
    const { store } = recording();
    const limiter = createRateLimiter(settings, { store, ...quiet });
    expect((limiter.checkAddress('192.0.2.1') as RateVerdict).allowed).toBe(true);
    expect(limiter.checkAddress('192.0.2.1')).toMatchObject({
      allowed: false,
      refusedBy: 'address',
      retryAfterSec: 10,
    });
    expect((limiter.checkAddress('192.0.2.2') as RateVerdict).allowed).toBe(true);
  });

  describe('when the store fails', () => {
    const failing: RateBucketStore = {
      take: () =>
        Promise.reject(
          new GatewayError('credential_store_unavailable', { cause: new Error('down') }),
        ),
    };

    it('fails open by default: no verdict, every failure counted, one warning per interval', async () => {
      let clock = 0;
      let counted = 0;
      const warnings: number[] = [];
      const limiter = createRateLimiter(settings, {
        store: failing,
        countStoreError: () => (counted += 1),
        warnStoreError: (failures) => warnings.push(failures),
        now: () => clock,
      });
      for (let i = 0; i < 3; i += 1) {
        expect(await limiter.checkCredential('accounts', undefined, basic)).toBeUndefined();
      }
      clock = 60_000;
      await limiter.checkCredential('accounts', undefined, basic);
      expect([counted, warnings]).toEqual([4, [1, 3]]);
    });

    it('fails closed with 503 credential_store_unavailable and a Retry-After', async () => {
      const limiter = createRateLimiter(
        { ...settings, onStoreError: 'closed' },
        { store: failing, ...quiet },
      );
      const error = await Promise.resolve(
        limiter.checkCredential('accounts', undefined, basic),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({
        code: 'credential_store_unavailable',
        status: 503,
        retryAfterSec: 1,
      });
    });
  });
});

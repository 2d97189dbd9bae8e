import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import type { Identity } from '../../../src/identity/identity.js';
import { createLocalBucketStore } from '../../../src/protection/local-buckets.js';
import type { RateBucketStore, TakeRequest } from '../../../src/protection/rate-bucket-store.js';
import type { RateLimit } from '../../../src/protection/rate-policy.js';
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
/** An enforced lease-mode limit (in process, as exact as any). */
const limit = (requests: number, periodSec: number, burst: number): RateLimit => ({
  requests,
  periodSec,
  burst,
  mode: 'lease',
  shadow: false,
});
const settings: RateLimitSettings = {
  credential: limit(2, 60, 2),
  subject: undefined,
  address: limit(1, 10, 1),
  onStoreError: 'open',
  storeErrorLogIntervalSec: 60,
};

function recording(): { store: RateBucketStore; requests: TakeRequest[] } {
  const requests: TakeRequest[] = [];
  const inner = createLocalBucketStore({ maxBuckets: 100, nowUs: () => 0 });
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

const quiet = {
  countStoreError: () => undefined,
  warnStoreError: () => undefined,
  warnMalformedOverride: () => undefined,
};

describe('the IETF headers (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('list one item per policy: q and w in RateLimit-Policy, r and t in RateLimit', () => {
    const states = [
      {
        index: 0,
        name: 'credential',
        enforced: true,
        granted: 1,
        policy: { requests: 600, periodSec: 60, burst: 100 },
        remaining: 99,
        waitUs: 100_001,
      },
      {
        index: 1,
        name: 'route',
        enforced: true,
        granted: 0,
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
    expect(rateLimitsEnabled({ ...none, subject: settings.credential }, [])).toBe(true);
    expect(rateLimitsEnabled(none, [limit(1, 1, 1)])).toBe(true);
    expect(rateLimitsEnabled(settings, [])).toBe(true);
  });

  it('counts Basic per key and Bearer per subject, and every request in its subject’s bucket; a key’s override for its own bucket, a subject’s for the subject’s', () => {
    const { store, requests } = recording();
    const limiter = createRateLimiter(
      { ...settings, subject: limit(9, 60, 9) },
      { store, ...quiet },
    );
    void limiter.checkCredential('accounts', undefined, basic);
    void limiter.checkCredential('accounts', { ...limit(5, 1, 5), mode: 'exact' }, bearer);
    const key = { kind: 'key', key: 'ak_alice1', subject: 'alice' };
    const subject = { kind: 'subject', subject: 'alice' };
    const lease = { mode: 'lease', enforce: true };
    const subjectBucket = {
      bucket: { kind: 'subject', subject: 'alice' },
      policy: { requests: 9, periodSec: 60, burst: 9 },
      ...lease,
      override: subject,
    };
    expect(requests).toEqual([
      {
        buckets: [
          {
            bucket: { kind: 'credential', owner: key },
            policy: { requests: 2, periodSec: 60, burst: 2 },
            ...lease,
            override: key,
          },
          subjectBucket,
        ],
      },
      {
        buckets: [
          {
            bucket: { kind: 'credential', owner: subject },
            policy: { requests: 2, periodSec: 60, burst: 2 },
            ...lease,
            override: subject,
          },
          subjectBucket,
          {
            bucket: { kind: 'route', route: 'accounts', owner: subject },
            policy: { requests: 5, periodSec: 1, burst: 5 },
            mode: 'exact',
            enforce: true,
          },
        ],
      },
    ]);
  });

  it('reads a bucket only an override limits in the credential limit’s mode', () => {
    const { store, requests } = recording();
    const exact = { ...limit(2, 60, 2), mode: 'exact' } as const;
    void createRateLimiter({ ...settings, credential: exact }, { store, ...quiet }).checkCredential(
      'accounts',
      undefined,
      basic,
    );
    expect(requests[0]?.buckets.map((b) => [b.bucket.kind, b.policy, b.mode])).toEqual([
      ['credential', { requests: 2, periodSec: 60, burst: 2 }, 'exact'],
      ['subject', undefined, 'exact'],
    ]);
  });

  it('holds a subject to its own budget across every pair and token it has', () => {
    const { store } = recording();
    const limiter = createRateLimiter(
      { ...settings, credential: undefined, subject: limit(3, 60, 3) },
      { store, ...quiet },
    );
    const pair = (key: string): Identity => ({ ...basic, key });
    const verdicts = [pair('ak_a'), pair('ak_b'), bearer, pair('ak_c'), pair('ak_d')].map(
      (identity) => limiter.checkCredential('accounts', undefined, identity) as RateVerdict,
    );
    expect(verdicts.map((v) => [v.allowed, v.refusedBy, v.limitHeader])).toEqual([
      [true, undefined, '"subject";r=2;t=20'],
      [true, undefined, '"subject";r=1;t=40'],
      [true, undefined, '"subject";r=0;t=60'],
      [false, 'subject', '"subject";r=0;t=20'],
      [false, 'subject', '"subject";r=0;t=20'],
    ]);
    const other: Identity = { ...basic, subject: 'bob', key: 'ak_bob' };
    expect(limiter.checkCredential('accounts', undefined, other)).toMatchObject({ allowed: true });
  });

  it('lets a request a shadow limit would refuse go on, naming the limit, and leaves it out of the headers', () => {
    const shadow = { ...limit(1, 60, 1), shadow: true };
    const { store } = recording();
    const limiter = createRateLimiter(
      { ...settings, credential: limit(5, 60, 5), subject: shadow },
      { store, ...quiet },
    );
    const check = (): RateVerdict =>
      limiter.checkCredential('accounts', undefined, basic) as RateVerdict;
    expect([check(), check()].map((v) => [v.allowed, v.shadowRefusedBy, v.policyHeader])).toEqual([
      [true, undefined, '"credential";q=5;w=60'],
      [true, 'subject', '"credential";q=5;w=60'],
    ]);
    // A shadow limit alone: no verdict until it would refuse, then one without headers.
    const alone = createRateLimiter(
      { ...settings, credential: undefined, subject: shadow },
      { store: recording().store, ...quiet },
    );
    expect(alone.checkCredential('accounts', undefined, basic)).toBeUndefined();
    expect(alone.checkCredential('accounts', undefined, basic)).toMatchObject({
      allowed: true,
      shadowRefusedBy: 'subject',
      policyHeader: '',
    });
  });

  it('reports a malformed override once per hash and value, however many requests read it', () => {
    const reported: string[] = [];
    let value = 'soon';
    const store: RateBucketStore = {
      take: () => ({
        allowed: true,
        retryAfterUs: 0,
        states: [],
        malformedOverrides: [{ key: '{ag}:key:ak_alice1', value }],
      }),
    };
    const limiter = createRateLimiter(settings, {
      ...quiet,
      store,
      warnMalformedOverride: (o) => reported.push(`${o.key}=${o.value}`),
    });
    for (let i = 0; i < 3; i += 1) void limiter.checkCredential('accounts', undefined, basic);
    value = 'later';
    for (let i = 0; i < 3; i += 1) void limiter.checkCredential('accounts', undefined, basic);
    expect(reported).toEqual(['{ag}:key:ak_alice1=soon', '{ag}:key:ak_alice1=later']);
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
        warnMalformedOverride: () => undefined,
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

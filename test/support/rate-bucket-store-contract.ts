import { describe, expect, it } from 'vitest';
import type {
  BucketId,
  PolicyName,
  RateBucketStore,
} from '../../src/protection/rate-bucket-store.js';

// The rate-limit buckets' contract, in process and in Redis (rate-bucket-store-contract.test.ts)
// and on a Redis Cluster (redis-cluster-backend.test.ts). The policies have long periods, so
// nothing refills during a test and every count is exact.

export const HOUR = { requests: 3600, periodSec: 3600 };
let run = 0;
/** A name no other test uses. */
export const unique = (name: string): string => `${name}${(run += 1)}`;
/**
 * A bucket of `kind` no other test uses; of `subject` when given (the buckets of one take are
 * one subject's: a sharded store keeps them together).
 */
export function fresh(kind: PolicyName, name: string, subject?: string): BucketId {
  const id = unique(name);
  const owner = subject ?? id;
  switch (kind) {
    case 'credential':
      return { kind, owner: { kind: 'key', key: `ak_${id}`, subject: owner } };
    case 'subject':
      return { kind, subject: owner };
    case 'route':
      return { kind, route: id, owner: { kind: 'subject', subject: owner } };
    case 'address':
      return { kind, network: id };
  }
}
export const TRACKED = { maxTrackedBuckets: 1000 };

export function bucketStoreContract(name: string, make: () => RateBucketStore): void {
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
      const subject = unique('both');
      const wide = { bucket: fresh('credential', 'wide', subject), policy: { ...HOUR, burst: 5 } };
      const narrow = { bucket: fresh('route', 'narrow', subject), policy: { ...HOUR, burst: 1 } };
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

    it('charge a lease of up to `count` requests, as many as the bucket holds, and refuse when it holds none', async () => {
      const store = make();
      const bucket = fresh('credential', 'lease');
      const leased = { bucket, policy: { ...HOUR, burst: 5 }, count: 3 };
      const results = [];
      for (let i = 0; i < 3; i += 1) results.push(await store.take({ buckets: [leased] }));
      expect(results.map((r) => [r.allowed, r.states[0]?.granted, r.states[0]?.remaining])).toEqual(
        [
          [true, 3, 2],
          [true, 2, 0],
          [false, 0, 0],
        ],
      );
    });

    it('never refuse for a shadow bucket: charged when it admits, reported when it would not', async () => {
      const store = make();
      const subject = unique('shadow');
      const shadow = {
        bucket: fresh('subject', 'shadow', subject),
        policy: { ...HOUR, burst: 1 },
        enforce: false,
      };
      const enforced = {
        bucket: fresh('route', 'enforced', subject),
        policy: { ...HOUR, burst: 5 },
      };
      const seen = [];
      for (let i = 0; i < 2; i += 1) {
        const r = await store.take({ buckets: [shadow, enforced] });
        seen.push([r.allowed, r.states.map((s) => [s.name, s.enforced, s.granted, s.remaining])]);
      }
      expect(seen).toEqual([
        [
          true,
          [
            ['subject', false, 1, 0],
            ['route', true, 1, 4],
          ],
        ],
        [
          true,
          [
            ['subject', false, 0, 0],
            ['route', true, 1, 3],
          ],
        ],
      ]);
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
      const subject = unique('some');
      const none = { bucket: fresh('credential', 'none', subject), policy: undefined };
      const route = { bucket: fresh('route', 'route', subject), policy: { ...HOUR, burst: 2 } };
      const result = await store.take({ buckets: [none, route] });
      expect([result.allowed, result.states.map((s) => s.name)]).toEqual([true, ['route']]);
      const empty = await store.take({ buckets: [none] });
      expect([empty.allowed, empty.states]).toEqual([true, []]);
    });
  });
}

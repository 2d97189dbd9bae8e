import { LRUCache } from 'lru-cache';
import { gcra, peek, type GcraStep, type RatePolicy } from './rate-policy.js';
import type { BucketState, RateBucketStore, TakeResult } from './rate-bucket-store.js';

export interface MemoryBucketStoreOptions {
  /** Buckets kept; the least recently used goes first (a forgotten bucket is a full one). */
  readonly maxBuckets: number;
  readonly nowUs?: () => number;
}

/**
 * The in-process buckets of a gateway on the memory store (`npm start`): the same GCRA as
 * the Redis script, per process. Overrides live in Redis hashes only, so none apply here.
 */
export function createMemoryBucketStore(options: MemoryBucketStoreOptions): RateBucketStore {
  const tats = new LRUCache<string, number>({ max: options.maxBuckets });
  const nowUs = options.nowUs ?? (() => Date.now() * 1000);
  return {
    take({ buckets }): TakeResult {
      const now = nowUs();
      const steps: (GcraStep | undefined)[] = buckets.map((b) =>
        b.policy === undefined ? undefined : gcra(tats.get(b.id), now, b.policy),
      );
      const allowed = steps.every((s) => s === undefined || s.allowed);
      let retryAfterUs = 0;
      const states: BucketState[] = [];
      buckets.forEach((bucket, i) => {
        const step = steps[i];
        const policy: RatePolicy | undefined = bucket.policy;
        if (step === undefined || policy === undefined) return;
        if (allowed) {
          tats.set(bucket.id, step.tatUs);
          states.push({
            name: bucket.name,
            policy,
            remaining: step.remaining,
            waitUs: step.waitUs,
          });
        } else if (!step.allowed) {
          retryAfterUs = Math.max(retryAfterUs, step.waitUs);
          states.push({ name: bucket.name, policy, remaining: 0, waitUs: step.waitUs });
        } else {
          const now2 = peek(tats.get(bucket.id), now, policy);
          states.push({
            name: bucket.name,
            policy,
            remaining: now2.remaining,
            waitUs: now2.waitUs,
          });
        }
      });
      return { allowed, retryAfterUs, states };
    },
  };
}

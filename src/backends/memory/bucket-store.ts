import { LRUCache } from 'lru-cache';
import { gcra, peek, type GcraStep, type RatePolicy } from '../../protection/rate-policy.js';
import type {
  BucketId,
  BucketOwner,
  BucketState,
  RateBucketStore,
  TakeResult,
} from '../../protection/rate-bucket-store.js';

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
      const ids = buckets.map((b) => bucketKey(b.bucket));
      const steps: (GcraStep | undefined)[] = buckets.map((b, i) =>
        b.policy === undefined ? undefined : gcra(tats.get(ids[i] ?? ''), now, b.policy),
      );
      const allowed = steps.every((s) => s === undefined || s.allowed);
      let retryAfterUs = 0;
      const states: BucketState[] = [];
      buckets.forEach((request, i) => {
        const step = steps[i];
        const policy: RatePolicy | undefined = request.policy;
        const id = ids[i] ?? '';
        const name = request.bucket.kind;
        if (step === undefined || policy === undefined) return;
        if (allowed) {
          tats.set(id, step.tatUs);
          states.push({
            name,
            policy,
            remaining: step.remaining,
            waitUs: step.waitUs,
          });
        } else if (!step.allowed) {
          retryAfterUs = Math.max(retryAfterUs, step.waitUs);
          states.push({ name, policy, remaining: 0, waitUs: step.waitUs });
        } else {
          const now2 = peek(tats.get(id), now, policy);
          states.push({
            name,
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

/**
 * A bucket as one string, for the map: its kind and what it counts, as a JSON array (one
 * reading only, whatever a route is named).
 */
function bucketKey(bucket: BucketId): string {
  const owner = (o: BucketOwner): string[] =>
    o.kind === 'key' ? ['key', o.key] : ['subject', o.subject];
  switch (bucket.kind) {
    case 'credential':
      return JSON.stringify([bucket.kind, ...owner(bucket.owner)]);
    case 'subject':
      return JSON.stringify([bucket.kind, bucket.subject]);
    case 'route':
      return JSON.stringify([bucket.kind, bucket.route, ...owner(bucket.owner)]);
    case 'address':
      return JSON.stringify([bucket.kind, bucket.network]);
  }
}

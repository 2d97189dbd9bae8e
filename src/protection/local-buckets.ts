import { LRUCache } from 'lru-cache';
import { gcra, peek, type GcraStep } from './rate-policy.js';
import type {
  BucketId,
  BucketOwner,
  BucketState,
  RateBucketStore,
  TakeResult,
} from './rate-bucket-store.js';

export interface LocalBucketStoreOptions {
  /** Buckets kept; the least recently used goes first (a forgotten bucket is a full one). */
  readonly maxBuckets: number;
  readonly nowUs?: () => number;
}

/**
 * Buckets in this process: the memory store's (`npm start`), and a lease store's fallback
 * while Redis is gone. The same GCRA as the Redis script. Overrides live in Redis hashes
 * only, so none apply here.
 */
export function createLocalBucketStore(options: LocalBucketStoreOptions): RateBucketStore {
  const tats = new LRUCache<string, number>({ max: options.maxBuckets });
  const nowUs = options.nowUs ?? (() => Date.now() * 1000);
  return {
    take({ buckets }): TakeResult {
      const now = nowUs();
      const ids = buckets.map((b) => bucketKey(b.bucket));
      const steps: (GcraStep | undefined)[] = buckets.map((b, i) =>
        b.policy === undefined ? undefined : gcra(tats.get(ids[i] ?? ''), now, b.policy, b.count),
      );
      const allowed = steps.every(
        (s, i) => s === undefined || s.allowed || buckets[i]?.enforce === false,
      );
      let retryAfterUs = 0;
      const states: BucketState[] = [];
      buckets.forEach((request, index) => {
        const step = steps[index];
        const { policy } = request;
        const id = ids[index] ?? '';
        if (step === undefined || policy === undefined) return;
        const enforced = request.enforce !== false;
        const state = { index, name: request.bucket.kind, policy, enforced };
        if (!step.allowed) {
          if (enforced) retryAfterUs = Math.max(retryAfterUs, step.waitUs);
          states.push({ ...state, granted: 0, remaining: 0, waitUs: step.waitUs });
        } else if (allowed) {
          tats.set(id, step.tatUs);
          const { granted, remaining, waitUs } = step;
          states.push({ ...state, granted, remaining, waitUs });
        } else {
          const { remaining, waitUs } = peek(tats.get(id), now, policy);
          states.push({ ...state, granted: 0, remaining, waitUs });
        }
      });
      return { allowed, retryAfterUs, states };
    },
  };
}

/**
 * A bucket as one string, for a map: a letter for its kind, then what it counts, each part
 * led by its length (one reading only, whatever a route or subject holds; cheaper than JSON
 * on the per-request path).
 */
export function bucketKey(bucket: BucketId): string {
  switch (bucket.kind) {
    case 'credential':
      return `c${ownerKey(bucket.owner)}`;
    case 'subject':
      return `s${part(bucket.subject)}`;
    case 'route':
      return `r${part(bucket.route)}${ownerKey(bucket.owner)}`;
    case 'address':
      return `a${part(bucket.network)}`;
  }
}

const part = (text: string): string => `${text.length}:${text}`;

const ownerKey = (owner: BucketOwner): string =>
  owner.kind === 'key' ? `k${part(owner.key)}` : `s${part(owner.subject)}`;

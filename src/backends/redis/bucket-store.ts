import type { RatePolicy } from '../../protection/rate-policy.js';
import type {
  BucketState,
  MalformedOverride,
  RateBucketStore,
  TakeResult,
} from '../../protection/rate-bucket-store.js';
import { hashTag, type RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { TAKE_BUCKETS } from './scripts.js';

/**
 * The Redis buckets, shared by every instance and worker on the same Redis: one take is one
 * run of scripts/take-buckets.lua, which reads the overrides too.
 */
export function createRedisBucketStore(runner: ScriptRunner, layout: RedisLayout): RateBucketStore {
  return {
    shared: true,
    async take({ buckets }): Promise<TakeResult> {
      const hashes: string[] = [];
      const policies: number[] = [];
      for (const b of buckets) {
        let override = 0;
        if (b.override !== undefined) {
          // Each hash once, however many buckets it overrides.
          const hash = layout.settings(b.override);
          if (!hashes.includes(hash)) hashes.push(hash);
          override = hashes.indexOf(hash) + 1;
        }
        policies.push(
          b.policy?.requests ?? 0,
          b.policy?.periodSec ?? 0,
          b.policy?.burst ?? 0,
          override,
          b.count ?? 1,
          b.enforce === false ? 0 : 1,
        );
      }
      const names = buckets.map((b) => layout.bucket(b.bucket));
      // One script decides them all, atomically: on a Cluster only within one slot. The
      // buckets of one request are one subject's or one network's (TakeRequest), so they are.
      if (new Set([...names, ...hashes].map(hashTag)).size > 1)
        throw new TypeError('the buckets of one take belong to one subject or one network');
      const reply = await runner.run(
        TAKE_BUCKETS,
        { buckets: names, overrides: hashes },
        { policies },
      );
      const states: BucketState[] = [];
      buckets.forEach((request, index) => {
        const bucket = reply.buckets[index];
        if (bucket === undefined || bucket.requests === 0) return;
        const policy: RatePolicy = {
          requests: bucket.requests,
          periodSec: bucket.periodSec,
          burst: bucket.burst,
        };
        states.push({
          index,
          name: request.bucket.kind,
          enforced: request.enforce !== false,
          granted: bucket.granted,
          policy,
          remaining: bucket.remaining,
          waitUs: bucket.waitUs,
        });
      });
      const malformedOverrides: MalformedOverride[] = [];
      for (const { override, value } of reply.malformed) {
        const hash = hashes[override - 1];
        if (hash !== undefined) malformedOverrides.push({ key: hash, value });
      }
      return {
        allowed: reply.allowed,
        retryAfterUs: reply.retryAfterUs,
        states,
        ...(malformedOverrides.length === 0 ? {} : { malformedOverrides }),
      };
    },
  };
}

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
        );
      }
      const names = buckets.map((b) => layout.bucket(b.bucket));
      // One script decides them all, atomically: on a Cluster only within one slot. The
      // buckets of one request are one subject's or one network's (TakeRequest), so they are.
      if (new Set([...names, ...hashes].map(hashTag)).size > 1)
        throw new TypeError('the buckets of one take belong to one subject or one network');
      const reply = (await runner.run(
        TAKE_BUCKETS,
        { buckets: names, overrides: hashes },
        { policies },
      )) as (number | string)[];
      const states: BucketState[] = [];
      buckets.forEach((request, i) => {
        const base = 2 + i * 5;
        const requests = Number(reply[base]);
        if (requests === 0) return;
        const policy: RatePolicy = {
          requests,
          periodSec: Number(reply[base + 1]),
          burst: Number(reply[base + 2]),
        };
        states.push({
          name: request.bucket.kind,
          policy,
          remaining: Number(reply[base + 3]),
          waitUs: Number(reply[base + 4]),
        });
      });
      const malformedOverrides: MalformedOverride[] = [];
      for (let i = 2 + buckets.length * 5; i + 1 < reply.length; i += 2) {
        const hash = hashes[Number(reply[i]) - 1];
        if (hash !== undefined) malformedOverrides.push({ key: hash, value: String(reply[i + 1]) });
      }
      return {
        allowed: Number(reply[0]) === 1,
        retryAfterUs: Number(reply[1]),
        states,
        ...(malformedOverrides.length === 0 ? {} : { malformedOverrides }),
      };
    },
  };
}

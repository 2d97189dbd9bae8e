import type { CredentialStore, KeySummary } from '../../credentials/credential-store.js';
import {
  EXPIRY_WARNING_MS,
  decodeExpiringCount,
  encodeExpiringCount,
  endsBy,
  tallyExpiring,
} from '../../credentials/expiring-pairs.js';
import { LISTED_FIELDS, listedFields, toKeySummary } from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { scanBatches } from './scan-keys.js';

/**
 * Commands of a walk in flight at once: a request's command queued behind them waits for at
 * most this many small reads, well under a millisecond of Redis's time.
 */
const IN_FLIGHT = 64;

/** A shared count is kept this many of its intervals: then, nobody counting, it leaves. */
const KEPT_INTERVALS = 3;

/**
 * The pairs ending soon, read from the indexes every writer keeps: each subject's `…:ends`
 * holds its pairs' ends, so a pair ending between now and the bound is one ZRANGEBYSCORE of
 * its subject away; its hash then says whether it still works and when it ends (a writer may
 * have moved the expiry since, or revoked it). The count is shared: one gateway of the fleet
 * walks the store per interval, the others read its result (docs/operations.md says the cost).
 */
export function redisExpiringPairs(deps: {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly now: () => number;
}): Pick<CredentialStore, 'expiringPairs' | 'countExpiring'> {
  const { runner, layout, now } = deps;

  async function* expiringPairs(untilMs: number): AsyncGenerator<KeySummary, void, undefined> {
    const nowMs = now();
    for await (const names of scanBatches(runner, layout.everySubjectEnds)) {
      const indexes = names.flatMap((name) => {
        const subject = layout.endsSubject(name);
        return subject === undefined ? [] : [{ name, subject }];
      });
      const candidates = (
        await inChunks(indexes, ({ name, subject }) =>
          runner
            .call(name, (c, k) => c.zrangebyscore(k, `(${nowMs}`, untilMs))
            .then((ids) => ids.map((id) => ({ id, subject }))),
        )
      ).flat();
      const pairs = await inChunks(candidates, ({ id, subject }) =>
        runner
          .call(layout.key(id, subject), (c, k) => c.hmget(k, ...LISTED_FIELDS))
          .then((values) => toKeySummary(id, listedFields(values))),
      );
      for (const [i, pair] of pairs.entries())
        // A hash of another subject under this id: not this index's pair.
        if (
          pair !== undefined &&
          pair.subject === candidates[i]?.subject &&
          endsBy(pair, nowMs, untilMs)
        )
          yield pair;
    }
  }

  return {
    expiringPairs,
    async countExpiring(maxAgeMs) {
      const latest = decodeExpiringCount(
        await runner.call(layout.expiringCount, (c, k) => c.get(k)),
      );
      const nowMs = now();
      if (latest !== undefined && nowMs - latest.countedAtMs < maxAgeMs) return latest;
      // One gateway counts per interval: the claim lapses by itself, also when its holder
      // dies mid-walk.
      const claimed = await runner.call(layout.expiringCountClaim, (c, k) =>
        c.set(k, String(nowMs), 'PX', maxAgeMs, 'NX'),
      );
      if (claimed !== 'OK') return latest;
      const count = await tallyExpiring(expiringPairs(nowMs + EXPIRY_WARNING_MS), nowMs);
      await runner.call(layout.expiringCount, (c, k) =>
        c.set(k, encodeExpiringCount(count), 'PX', maxAgeMs * KEPT_INTERVALS),
      );
      return count;
    },
  };
}

/** `read` of every item, IN_FLIGHT at a time, the answers in the items' order. */
async function inChunks<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let at = 0; at < items.length; at += IN_FLIGHT)
    out.push(...(await Promise.all(items.slice(at, at + IN_FLIGHT).map(read))));
  return out;
}

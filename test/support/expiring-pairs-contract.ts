import { describe, expect, it } from 'vitest';
import type { CredentialStore, KeySummary } from '../../src/credentials/credential-store.js';
import {
  clock,
  freshStoreEach,
  DAY_MS,
  iso,
  keyRecord,
  PAST,
  START_MS,
  summary,
  type StoreUnderTest,
} from './credential-store-contract.js';

// The pairs ending soon, every subject's (issue 29, point 4): what every CredentialStore
// yields to `keys list --expiring` and counts for gateway_pairs_expiring. Run on the memory
// store, a standalone Redis (credential-store-contract.test.ts) and a Redis Cluster
// (redis-cluster-backend.test.ts), on the contract's clock.

/** Everything a walk yields, by key id. */
export async function walked(
  store: CredentialStore,
  untilMs: number,
): Promise<Map<string, KeySummary>> {
  const found = new Map<string, KeySummary>();
  for await (const pair of store.expiringPairs(untilMs)) found.set(pair.key, pair);
  return found;
}

export function expiringPairsContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
): void {
  describe(`${name} credential store: pairs ending soon`, () => {
    const fresh = freshStoreEach(makeStore);

    const endsIn = (days: number) => ({ expiresAt: iso(START_MS + days * DAY_MS) });
    const pairs = {
      week: keyRecord('ak_end_week', 'ann', endsIn(3)),
      month: keyRecord('ak_end_month', 'ben', endsIn(20)),
      later: keyRecord('ak_end_later', 'cat', endsIn(60)),
      never: keyRecord('ak_end_never', 'ann'),
      expired: keyRecord('ak_end_expired', 'dan', { expiresAt: PAST }),
      revoked: keyRecord('ak_end_revoked', 'eve', endsIn(5)),
    };

    async function writePairs(): Promise<void> {
      for (const record of Object.values(pairs))
        await expect(fresh.store.createKey(record, 10)).resolves.toBe(true);
      await fresh.store.revokeKey(pairs.revoked.key, iso(START_MS - 1000));
    }

    it('yields the usable pairs of every subject whose expiry comes by the bound, and no other', async () => {
      await writePairs();
      const month = await walked(fresh.store, START_MS + 30 * DAY_MS);
      expect([...month.keys()].sort()).toEqual([pairs.month.key, pairs.week.key]);
      expect(month.get(pairs.week.key)).toEqual(summary(pairs.week));
      expect([...(await walked(fresh.store, START_MS + 7 * DAY_MS)).keys()]).toEqual([
        pairs.week.key,
      ]);
      // Once a pair's end has come, it is no longer ending: it has ended.
      clock.ms = START_MS + 4 * DAY_MS;
      expect([...(await walked(fresh.store, clock.ms + 30 * DAY_MS)).keys()]).toEqual([
        pairs.month.key,
      ]);
    });

    it('counts them in the 7 and 30 day windows, as of its clock', async () => {
      await writePairs();
      await expect(fresh.store.countExpiring(60_000)).resolves.toEqual({
        countedAtMs: START_MS,
        within: { '7d': 1, '30d': 2 },
      });
    });

    it('finds them across many subjects (each master of a Cluster), with an empty store before', async () => {
      await expect(walked(fresh.store, START_MS + 30 * DAY_MS)).resolves.toEqual(new Map());
      const made: string[] = [];
      for (let i = 0; i < 40; i += 1) {
        const key = `ak_many_${String(i).padStart(2, '0')}`;
        await fresh.store.createKey(
          keyRecord(key, `subject-${String(i)}`, endsIn(1 + (i % 25))),
          10,
        );
        made.push(key);
      }
      expect([...(await walked(fresh.store, START_MS + 30 * DAY_MS)).keys()].sort()).toEqual(made);
    });
  });
}

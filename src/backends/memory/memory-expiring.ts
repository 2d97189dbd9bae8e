import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CredentialStore, KeyRecord, KeySummary } from '../../credentials/credential-store.js';
import { EXPIRY_WARNING_MS, endsBy, tallyExpiring } from '../../credentials/expiring-pairs.js';
import type { MemoryState } from './memory-state.js';

/**
 * Pairs looked at between two turns of the event loop: a walk over a large store gives way to
 * the requests waiting, as a walk over Redis does while it waits for each reply.
 */
const WALK_BATCH = 1000;

/** What a listing shows of a pair: not what only a check of its secret needs. */
const summaryOf = ({
  secretHash: _,
  secretBits: __,
  verifiedRecord: ___,
  ...summary
}: KeyRecord): KeySummary => summary;

/** The pairs ending soon, every subject's: one walk over the Map, in batches. */
export function memoryExpiring(
  state: MemoryState,
): Pick<CredentialStore, 'expiringPairs' | 'countExpiring'> {
  const { keys, now } = state;
  async function* expiringPairs(untilMs: number) {
    const nowMs = now();
    let seen = 0;
    // A Map's iterator is defined across changes: pairs added meanwhile are visited, deleted
    // ones are not.
    for (const record of keys.values()) {
      seen += 1;
      if (seen % WALK_BATCH === 0) await nextTurn();
      if (endsBy(record, nowMs, untilMs)) yield summaryOf(record);
    }
  }
  return {
    expiringPairs,
    // One process holds the store: nobody to share a count with, each is counted here.
    countExpiring: () => {
      const nowMs = now();
      return tallyExpiring(expiringPairs(nowMs + EXPIRY_WARNING_MS), nowMs);
    },
  };
}

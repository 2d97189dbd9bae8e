import {
  FIRST_PAGE,
  isUsable,
  newestFirst,
  oldestFirst,
  type CredentialStore,
} from '../../credentials/credential-store.js';
import { rollOf, ROLL_MESSAGES } from '../../credentials/key-roll.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { MemoryState } from './memory-state.js';

/** The pairs read: one, a subject's page, how many are usable. */
export function memoryPairReads(
  state: MemoryState,
): Pick<CredentialStore, 'getKey' | 'listKeys' | 'countActiveKeys'> {
  const { keys, gone, pairsOf, activeCount } = state;
  return {
    getKey(key) {
      const found = keys.get(key);
      return Promise.resolve(found === undefined || gone(found) ? undefined : found);
    },
    listKeys(subject, page = FIRST_PAGE) {
      const sorted = pairsOf(subject).sort(page.order === 'asc' ? oldestFirst : newestFirst);
      const start = page.after === undefined ? 0 : sorted.findIndex((r) => r.key === page.after);
      if (start === -1) return Promise.resolve(undefined);
      const from = page.after === undefined ? 0 : start + 1;
      return Promise.resolve(
        sorted
          .slice(from, from + page.limit)
          .map(({ secretHash: _, secretBits: __, verifiedRecord: ___, ...summary }) => summary),
      );
    },
    countActiveKeys: (subject) => Promise.resolve(activeCount(subject)),
  };
}

/** The pairs changed: made, revoked, rolled, last used, given a verified record. */
export function memoryPairWrites(
  state: MemoryState,
): Pick<
  CredentialStore,
  | 'createKey'
  | 'revokeKey'
  | 'rollKey'
  | 'revokeSubjectKeys'
  | 'recordLastUse'
  | 'keepVerifiedRecord'
> {
  const { keys, now, gone, pairsOf, sweep, activeCount, revoke, announce } = state;
  return {
    createKey(record, maxActive) {
      if (activeCount(record.subject) >= maxActive || keys.has(record.key))
        return Promise.resolve(false);
      keys.set(record.key, record);
      return Promise.resolve(true);
    },
    revokeKey(key, at, options = {}) {
      sweep();
      const found = keys.get(key);
      if (found === undefined) return Promise.resolve(undefined);
      if (
        isUsable(found, now()) &&
        options.keepLastActive === true &&
        activeCount(found.subject) <= 1
      ) {
        return Promise.reject(new GatewayError('conflict'));
      }
      return Promise.resolve(revoke(found, at));
    },
    rollKey(roll, maxActive) {
      const found = keys.get(roll.key);
      if (found === undefined || gone(found)) return Promise.resolve(undefined);
      if (!isUsable(found, now()))
        return Promise.reject(new GatewayError('conflict', { message: ROLL_MESSAGES.ended }));
      // The rolled pair is among the usable ones counted, and is ending: not counted.
      if (activeCount(found.subject) - 1 >= maxActive)
        return Promise.reject(new GatewayError('limit_exceeded'));
      if (keys.has(roll.successor.key)) return Promise.reject(new Error(ROLL_MESSAGES.idTaken));
      const rolled = rollOf(found, roll);
      keys.set(rolled.successor.key, rolled.successor);
      keys.set(found.key, rolled.rolled);
      announce({ kind: 'key', key: found.key });
      return Promise.resolve(rolled);
    },
    revokeSubjectKeys(subject, at) {
      const usable = pairsOf(subject).filter((k) => isUsable(k, now()));
      return Promise.resolve(usable.map((found) => revoke(found, at).key));
    },
    recordLastUse(uses) {
      for (const [key, at] of uses) {
        const found = keys.get(key);
        if (found !== undefined && (found.lastUsedAt === undefined || found.lastUsedAt < at))
          keys.set(key, { ...found, lastUsedAt: at });
      }
      return Promise.resolve();
    },
    keepVerifiedRecord(key, secretHash, record) {
      const found = keys.get(key);
      if (found?.secretHash !== secretHash || found.status !== 'active')
        return Promise.resolve(false);
      keys.set(key, { ...found, verifiedRecord: record });
      return Promise.resolve(true);
    },
  };
}

import { GatewayError } from '../../errors/gateway-error.js';
import { newFleetKeyText } from '../../credentials/verified-record.js';
import {
  DEFAULT_RETAIN_ENDED_SEC,
  FIRST_PAGE,
  IN_PROCESS_HEALTH,
  isPastRetention,
  isUsable,
  newestFirst,
  oldestFirst,
  type CredentialStore,
  type KeyRecord,
  type RetentionOptions,
  type Revocation,
  type UserRecord,
} from '../../credentials/credential-store.js';

/** The pair without its verified record: revoked, or with a new hash, it proves nothing now. */
const unrecorded = ({ verifiedRecord: _, ...pair }: KeyRecord): KeyRecord => pair;

/**
 * The embedded store for the zero-setup default and single-instance use: one process,
 * nothing persisted. Revocations reach only this process's listeners.
 */
export function createMemoryStore(
  seed: { keys?: readonly KeyRecord[]; users?: readonly UserRecord[] } = {},
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  now: () => number = Date.now,
  retention: RetentionOptions = { retainEndedSec: DEFAULT_RETAIN_ENDED_SEC },
): CredentialStore {
  const keys = new Map<string, KeyRecord>((seed.keys ?? []).map((k) => [k.key, k]));
  // Made at once: the store lives as long as its process, and so does every record under it.
  const fleetKey = newFleetKeyText();
  const users = new Map<string, UserRecord>((seed.users ?? []).map((u) => [u.username, u]));
  const listeners: ((revocation: Revocation, publishedAtMs: undefined) => void)[] = [];
  const gone = (record: KeyRecord): boolean =>
    isPastRetention(record, now(), retention.retainEndedSec);
  // Every pair is in one Map: a sweep is one pass over it, paid by the calls that change or
  // list pairs (each of which looks at every pair anyway), never by getKey.
  const sweep = (): void => {
    for (const [key, record] of keys) if (gone(record)) keys.delete(key);
  };
  const pairsOf = (subject: string): KeyRecord[] => {
    sweep();
    return [...keys.values()].filter((k) => k.subject === subject);
  };
  const activeCount = (subject: string): number =>
    pairsOf(subject).filter((k) => isUsable(k, now())).length;
  const announce = (revocation: Revocation): void => {
    // Heard in the same call: there is no publish time to tell a lag from.
    for (const listener of listeners) listener(revocation, undefined);
  };
  const revoke = (found: KeyRecord, at: string): KeyRecord => {
    const revoked: KeyRecord =
      found.status === 'revoked'
        ? unrecorded(found)
        : { ...unrecorded(found), status: 'revoked', revokedAt: at };
    keys.set(found.key, revoked);
    announce({ kind: 'key', key: found.key });
    return revoked;
  };
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
    createKey(record, maxActive) {
      if (activeCount(record.subject) >= maxActive || keys.has(record.key))
        return Promise.resolve(false);
      keys.set(record.key, record);
      return Promise.resolve(true);
    },
    countActiveKeys: (subject) => Promise.resolve(activeCount(subject)),
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
    getUser: (username) => Promise.resolve(users.get(username)),
    addUser(record) {
      if (users.has(record.username)) return Promise.resolve(false);
      users.set(record.username, record);
      return Promise.resolve(true);
    },
    setUserPassword(username, passwordHash) {
      const found = users.get(username);
      if (found === undefined) return Promise.resolve(false);
      users.set(username, {
        ...found,
        passwordHash,
        tokenGeneration: (found.tokenGeneration ?? 0) + 1,
      });
      announce({ kind: 'subject', subject: found.subject });
      return Promise.resolve(true);
    },
    replaceHash(owner, expected, next) {
      if (owner.kind === 'key') {
        const found = keys.get(owner.key);
        if (found?.secretHash !== expected) return Promise.resolve(false);
        keys.set(owner.key, { ...unrecorded(found), secretHash: next });
      } else {
        const found = users.get(owner.username);
        if (found?.passwordHash !== expected) return Promise.resolve(false);
        users.set(owner.username, { ...found, passwordHash: next });
      }
      return Promise.resolve(true);
    },
    removeUser(username) {
      const found = users.get(username);
      if (found === undefined) return Promise.resolve(false);
      users.delete(username);
      announce({ kind: 'subject', subject: found.subject });
      return Promise.resolve(true);
    },
    fleetKey: () => Promise.resolve(fleetKey),
    keepVerifiedRecord(key, secretHash, record) {
      const found = keys.get(key);
      if (found?.secretHash !== secretHash || found.status !== 'active')
        return Promise.resolve(false);
      keys.set(key, { ...found, verifiedRecord: record });
      return Promise.resolve(true);
    },
    ping: () => Promise.resolve(),
    health: IN_PROCESS_HEALTH,
    subscribe(listener) {
      listeners.push(listener);
    },
    close: () => Promise.resolve(),
  };
}

import { GatewayError } from '../errors/gateway-error.js';
import {
  IN_PROCESS_HEALTH,
  isUsable,
  newestFirst,
  type CredentialStore,
  type KeyRecord,
  type Revocation,
  type UserRecord,
} from './credential-store.js';

/**
 * The embedded store for the zero-setup default and single-instance use: one process,
 * nothing persisted. Revocations reach only this process's listeners.
 */
export function createMemoryStore(
  seed: { keys?: readonly KeyRecord[]; users?: readonly UserRecord[] } = {},
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  now: () => number = Date.now,
): CredentialStore {
  const keys = new Map<string, KeyRecord>((seed.keys ?? []).map((k) => [k.key, k]));
  const users = new Map<string, UserRecord>((seed.users ?? []).map((u) => [u.username, u]));
  const listeners: ((revocation: Revocation) => void)[] = [];
  const activeCount = (subject: string): number =>
    [...keys.values()].filter((k) => k.subject === subject && isUsable(k, now())).length;
  const announce = (revocation: Revocation): void => {
    for (const listener of listeners) listener(revocation);
  };
  return {
    getKey: (key) => Promise.resolve(keys.get(key)),
    listKeys: (subject) =>
      Promise.resolve([...keys.values()].filter((k) => k.subject === subject).sort(newestFirst)),
    createKey(record, maxActive) {
      if (activeCount(record.subject) >= maxActive || keys.has(record.key))
        return Promise.resolve(false);
      keys.set(record.key, record);
      return Promise.resolve(true);
    },
    countActiveKeys: (subject) => Promise.resolve(activeCount(subject)),
    revokeKey(key, at, options = {}) {
      const found = keys.get(key);
      if (found === undefined) return Promise.resolve(undefined);
      if (
        isUsable(found, now()) &&
        options.keepLastActive === true &&
        activeCount(found.subject) <= 1
      ) {
        return Promise.reject(new GatewayError('conflict'));
      }
      const revoked: KeyRecord =
        found.status === 'revoked' ? found : { ...found, status: 'revoked', revokedAt: at };
      keys.set(key, revoked);
      announce({ kind: 'key', key });
      return Promise.resolve(revoked);
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
      users.set(username, { ...found, passwordHash });
      return Promise.resolve(true);
    },
    replaceHash(owner, expected, next) {
      if (owner.kind === 'key') {
        const found = keys.get(owner.key);
        if (found?.secretHash !== expected) return Promise.resolve(false);
        keys.set(owner.key, { ...found, secretHash: next });
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
    ping: () => Promise.resolve(),
    health: IN_PROCESS_HEALTH,
    subscribe(listener) {
      listeners.push(listener);
    },
    close: () => Promise.resolve(),
  };
}

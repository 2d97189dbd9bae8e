import type { CredentialStore } from '../../credentials/credential-store.js';
import { unrecorded, type MemoryState } from './memory-state.js';

/** The users, and the compare-and-set of a user's or a pair's hash. */
export function memoryUsers(
  state: MemoryState,
): Pick<CredentialStore, 'getUser' | 'addUser' | 'setUserPassword' | 'removeUser' | 'replaceHash'> {
  const { keys, users, announce, endUserSessions } = state;
  return {
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
      endUserSessions(username);
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
      endUserSessions(username);
      announce({ kind: 'subject', subject: found.subject });
      return Promise.resolve(true);
    },
  };
}

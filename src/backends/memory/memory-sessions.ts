import type { CredentialStore } from '../../credentials/credential-store.js';
import { encodeSession, hasEnded } from '../../credentials/portal-session.js';
import type { MemoryState } from './memory-state.js';

type Sessions = Pick<
  CredentialStore,
  'createSession' | 'getSession' | 'replaceSession' | 'endSession'
>;

/** The portal's sessions, by the hash of their id; a user's go with a new password or the user. */
export function memorySessions(state: MemoryState): Sessions {
  const { sessions, users, now } = state;
  const sweep = (): void => {
    for (const [id, session] of sessions) if (hasEnded(session, now())) sessions.delete(id);
  };
  return {
    createSession(ref, session) {
      if (users.get(session.username)?.subject !== session.subject) return Promise.resolve(false);
      sweep();
      sessions.set(ref.idHash, session);
      return Promise.resolve(true);
    },
    getSession(ref, nowMs) {
      const found = sessions.get(ref.idHash);
      return Promise.resolve(found === undefined || hasEnded(found, nowMs) ? undefined : found);
    },
    replaceSession(ref, expected, next) {
      const found = sessions.get(ref.idHash);
      if (found === undefined || encodeSession(found) !== encodeSession(expected))
        return Promise.resolve(false);
      sessions.set(ref.idHash, next);
      return Promise.resolve(true);
    },
    endSession(ref) {
      sessions.delete(ref.idHash);
      return Promise.resolve();
    },
  };
}

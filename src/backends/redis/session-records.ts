import type { CredentialStore, PortalSession } from '../../credentials/credential-store.js';
import { decodeSession, encodeSession, hasEnded } from '../../credentials/portal-session.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { CREATE_SESSION, REPLACE_SESSION } from './scripts.js';
import type { SingleSlot } from './single-slot.js';

type Sessions = Pick<
  CredentialStore,
  'createSession' | 'getSession' | 'replaceSession' | 'endSession'
>;

/**
 * How long the hash must live at least for `session` (its end, on the gateway's clock): the
 * hash expires once every session in it has ended and none was made or seen meanwhile.
 */
const ttlOf = (session: PortalSession): number =>
  Math.max(1, session.endsAtMs - session.lastSeenMs);

/**
 * The portal's sessions on Redis: one hash per tag (layout.ts `sessionsAt`), the tag being
 * the user's, which the session id carries, so that a session is found from its id alone and
 * shares a slot with its user's hash: a new password or the user's removal ends the user's
 * sessions in the same script (user-records.ts). Only the SHA-256 of an id is kept.
 */
export function redisSessionRecords(
  runner: ScriptRunner,
  layout: RedisLayout,
  single: SingleSlot | undefined,
): Sessions {
  return {
    createSession: async (ref, session) => {
      const user = layout.user(session.username);
      // A user not moved out of the single slot yet was verified there, in another slot: its
      // hash is read first (the user scripts still end its sessions, user-records.ts).
      const here = single === undefined || (await runner.call(user, (c, k) => c.exists(k))) === 1;
      if (single !== undefined && !here) {
        const old = single.layout.user(session.username);
        if ((await runner.call(old, (c, k) => c.hget(k, 'subject'))) !== session.subject)
          return false;
      }
      return runner.run(
        CREATE_SESSION,
        { sessions: layout.sessionsAt(ref.tag), user: here ? [user] : [] },
        {
          id: ref.idHash,
          session: encodeSession(session),
          subject: session.subject,
          nowMs: session.lastSeenMs,
          ttlMs: ttlOf(session),
        },
      );
    },
    getSession: async (ref, nowMs) => {
      const text = await runner.call(layout.sessionsAt(ref.tag), (c, k) => c.hget(k, ref.idHash));
      const session = text === null ? undefined : decodeSession(text);
      return session === undefined || hasEnded(session, nowMs) ? undefined : session;
    },
    replaceSession: (ref, expected, next) =>
      runner.run(
        REPLACE_SESSION,
        { sessions: layout.sessionsAt(ref.tag) },
        {
          id: ref.idHash,
          expected: encodeSession(expected),
          next: encodeSession(next),
          ttlMs: ttlOf(next),
        },
      ),
    endSession: async (ref) => {
      await runner.call(layout.sessionsAt(ref.tag), (c, k) => c.hdel(k, ref.idHash));
    },
  };
}

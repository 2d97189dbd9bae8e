import type { CredentialStore } from '../../credentials/credential-store.js';
import { toUserRecord } from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { ADD_USER, END_USER_SESSIONS, REMOVE_USER, SET_USER_PASSWORD } from './scripts.js';
import type { SingleSlot } from './single-slot.js';

type UserRecords = Pick<CredentialStore, 'getUser' | 'addUser' | 'setUserPassword' | 'removeUser'>;

/** The users on Redis: read here, else in the single slot while one is configured. */
export function redisUserRecords(
  runner: ScriptRunner,
  layout: RedisLayout,
  single: SingleSlot | undefined,
): UserRecords {
  return {
    getUser: async (username) => {
      const here = toUserRecord(
        username,
        await runner.call(layout.user(username), (c, k) => c.hgetall(k)),
      );
      if (here !== undefined || single === undefined) return here;
      return toUserRecord(
        username,
        await runner.call(single.layout.user(username), (c, k) => c.hgetall(k)),
      );
    },
    addUser: async (record) => {
      // A user not moved out of the single slot yet holds the username too.
      if (
        single !== undefined &&
        (await runner.call(single.layout.user(record.username), (c, k) => c.exists(k))) === 1
      )
        return false;
      return runner.run(
        ADD_USER,
        { user: layout.user(record.username) },
        {
          passwordHash: record.passwordHash,
          subject: record.subject,
          createdAt: record.createdAt,
          scopes: record.scopes.join(' '),
        },
      );
    },
    // A user's portal sessions are kept under its tag in today's layout (session-records.ts):
    // ended in the same script as the change of today's user hash; for a user still in the
    // single slot (another slot) just after its change there, by a script of their own.
    setUserPassword: async (username, passwordHash) => {
      const sessions = layout.sessionsOf(username);
      const args = { passwordHash, username, channel: layout.channel };
      if (
        await runner.run(
          SET_USER_PASSWORD,
          { user: layout.user(username), sessions: [sessions] },
          args,
        )
      )
        return true;
      if (single === undefined) return false;
      const changed = await runner.run(
        SET_USER_PASSWORD,
        { user: single.layout.user(username), sessions: [] },
        args,
      );
      if (changed) await runner.run(END_USER_SESSIONS, { sessions }, { username });
      return changed;
    },
    removeUser: async (username) => {
      const sessions = layout.sessionsOf(username);
      const args = { username, channel: layout.channel };
      // Wherever it is: a copy left in the single slot would be read again.
      const [here, there] = await Promise.all([
        runner.run(REMOVE_USER, { user: layout.user(username), sessions: [sessions] }, args),
        single === undefined
          ? false
          : runner.run(REMOVE_USER, { user: single.layout.user(username), sessions: [] }, args),
      ]);
      if (there && !here) await runner.run(END_USER_SESSIONS, { sessions }, { username });
      return here || there;
    },
  };
}

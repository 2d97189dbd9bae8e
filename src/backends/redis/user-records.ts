import type { CredentialStore } from '../../credentials/credential-store.js';
import { toUserRecord } from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { ADD_USER, REMOVE_USER, SET_USER_PASSWORD } from './scripts.js';
import type { SingleSlot } from './single-slot.js';

type UserRecords = Pick<CredentialStore, 'getUser' | 'addUser' | 'setUserPassword' | 'removeUser'>;

/** The users on Redis: read here, else in the single slot while one is configured. */
export function redisUserRecords(
  runner: ScriptRunner,
  layout: RedisLayout,
  single: SingleSlot | undefined,
): UserRecords {
  /** The user's hash here, then in the single slot (undefined when there is none). */
  const hashesOf = (username: string): readonly (string | undefined)[] => [
    layout.user(username),
    single?.layout.user(username),
  ];
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
    setUserPassword: async (username, passwordHash) => {
      for (const user of hashesOf(username)) {
        if (user === undefined) continue;
        if (
          await runner.run(SET_USER_PASSWORD, { user }, { passwordHash, channel: layout.channel })
        )
          return true;
      }
      return false;
    },
    removeUser: async (username) => {
      // Wherever it is: a copy left in the single slot would be read again.
      const removed = await Promise.all(
        hashesOf(username).map(async (user) =>
          user === undefined
            ? false
            : await runner.run(REMOVE_USER, { user }, { channel: layout.channel }),
        ),
      );
      return removed.includes(true);
    },
  };
}

import {
  isPastRetention,
  isUsable,
  type KeyRecord,
  type PortalSession,
  type RetentionOptions,
  type Revocation,
  type UserRecord,
} from '../../credentials/credential-store.js';

/** The pair without its verified record: revoked, or with a new hash, it proves nothing now. */
export const unrecorded = ({ verifiedRecord: _, ...pair }: KeyRecord): KeyRecord => pair;

/** What the memory store holds, and the rules every part of it shares. */
export interface MemoryState {
  readonly keys: Map<string, KeyRecord>;
  readonly users: Map<string, UserRecord>;
  /** Portal sessions by the SHA-256 of their id (the tag locates nothing here). */
  readonly sessions: Map<string, PortalSession>;
  /** Ends every portal session of the user (a new password, or the user removed). */
  readonly endUserSessions: (username: string) => void;
  readonly listeners: ((revocation: Revocation, publishedAtMs: undefined) => void)[];
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  /** Past its retention: gone, whether or not a sweep has deleted it yet. */
  readonly gone: (record: KeyRecord) => boolean;
  /** The subject's pairs, after a sweep. */
  readonly pairsOf: (subject: string) => KeyRecord[];
  readonly sweep: () => void;
  readonly activeCount: (subject: string) => number;
  readonly announce: (revocation: Revocation) => void;
  /** Revokes the pair at `at` (a pair revoked before keeps its time) and announces it. */
  readonly revoke: (found: KeyRecord, at: string) => KeyRecord;
}

export function createMemoryState(
  seed: { keys?: readonly KeyRecord[]; users?: readonly UserRecord[] },
  now: () => number,
  retention: RetentionOptions,
): MemoryState {
  const keys = new Map<string, KeyRecord>((seed.keys ?? []).map((k) => [k.key, k]));
  const users = new Map<string, UserRecord>((seed.users ?? []).map((u) => [u.username, u]));
  const sessions = new Map<string, PortalSession>();
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
  const announce = (revocation: Revocation): void => {
    // Heard in the same call: there is no publish time to tell a lag from.
    for (const listener of listeners) listener(revocation, undefined);
  };
  return {
    keys,
    users,
    sessions,
    endUserSessions: (username) => {
      for (const [id, session] of sessions) if (session.username === username) sessions.delete(id);
    },
    listeners,
    now,
    gone,
    pairsOf,
    sweep,
    activeCount: (subject) => pairsOf(subject).filter((k) => isUsable(k, now())).length,
    announce,
    revoke: (found, at) => {
      const revoked: KeyRecord =
        found.status === 'revoked'
          ? unrecorded(found)
          : { ...unrecorded(found), status: 'revoked', revokedAt: at };
      keys.set(found.key, revoked);
      announce({ kind: 'key', key: found.key });
      return revoked;
    },
  };
}

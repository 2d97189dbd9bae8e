import { defineScript } from './run-script.js';
import {
  decodeAdopt,
  decodeCount,
  decodeCreate,
  decodeFlag,
  decodeIds,
  decodeListing,
  decodeLockout,
  decodePositions,
  decodeReplace,
  decodeRevoke,
  decodeTakeBuckets,
  type PairReply,
} from './script-replies.js';

/**
 * Every script of the Redis backend, each defined once with the names of its KEYS and ARGV
 * (scripts/<file> says what each does), and the decoder of its reply (script-replies.ts).
 * The pair scripts share the index's keys and arguments, and the functions of
 * scripts/pair-index.lua.
 */

const PAIR_KEYS = ['pairs', 'ends', 'active', 'legacy', 'hashes[]'] as const;
const PAIR_ARGS = ['nowMs', 'retainMs', 'subject', 'ids[]'] as const;
const pairScript = <
  const Keys extends readonly string[],
  const Args extends readonly string[],
  Done,
>(
  file: string,
  keys: Keys,
  args: Args,
  reply: (reply: unknown) => PairReply<Done>,
) =>
  defineScript(file, {
    keys: [...PAIR_KEYS, ...keys] as const,
    args: [...PAIR_ARGS, ...args] as const,
    libraries: ['pair-index.lua'],
    reply,
  });

export const CREATE_PAIR = pairScript(
  'create-pair.lua',
  ['key'],
  ['maxActive', 'id', 'secretHash', 'label', 'createdAt', 'createdMs', 'expiresAt', 'scopes'],
  decodeCreate,
);
export const COUNT_ACTIVE_PAIRS = pairScript('count-active-pairs.lua', [], [], decodeCount);
export const REVOKE_PAIR = pairScript(
  'revoke-pair.lua',
  ['key'],
  ['id', 'revokedAt', 'keepLastActive', 'channel'],
  decodeRevoke,
);
export const REVOKE_SUBJECT_PAIRS = pairScript(
  'revoke-subject-pairs.lua',
  [],
  ['revokedAt', 'channel'],
  decodeIds,
);
export const LIST_PAIRS = pairScript(
  'list-pairs.lua',
  [],
  ['limit', 'order', 'after', 'fields[]'],
  decodeListing,
);
export const ADOPT_PAIR = pairScript(
  'adopt-pair.lua',
  ['key'],
  ['id', 'fields[]', 'pttlMs', 'channel'],
  decodeAdopt,
);

export const RECORD_LAST_USE = defineScript('record-last-use.lua', {
  keys: ['hashes[]'],
  args: ['times[]'],
  reply: decodePositions,
});
export const ADD_USER = defineScript('add-user.lua', {
  keys: ['user'],
  args: ['passwordHash', 'subject', 'createdAt', 'scopes'],
  reply: decodeFlag,
});
export const SET_USER_PASSWORD = defineScript('set-user-password.lua', {
  keys: ['user', 'sessions[]'],
  args: ['passwordHash', 'username', 'channel'],
  libraries: ['user-sessions.lua'],
  reply: decodeFlag,
});
export const REPLACE_HASH = defineScript('replace-hash.lua', {
  keys: ['hash'],
  args: ['field', 'expected', 'next'],
  reply: decodeReplace,
});
export const KEEP_VERIFIED_RECORD = defineScript('keep-verified-record.lua', {
  keys: ['key'],
  args: ['secretHash', 'record'],
  reply: decodeFlag,
});
export const REMOVE_USER = defineScript('remove-user.lua', {
  keys: ['user', 'sessions[]'],
  args: ['username', 'channel'],
  libraries: ['user-sessions.lua'],
  reply: decodeFlag,
});

export const CREATE_SESSION = defineScript('create-session.lua', {
  keys: ['sessions', 'user[]'],
  args: ['id', 'session', 'subject', 'nowMs', 'ttlMs'],
  libraries: ['user-sessions.lua'],
  reply: decodeFlag,
});
export const REPLACE_SESSION = defineScript('replace-session.lua', {
  keys: ['sessions'],
  args: ['id', 'expected', 'next', 'ttlMs'],
  reply: decodeFlag,
});
export const END_USER_SESSIONS = defineScript('end-user-sessions.lua', {
  keys: ['sessions'],
  args: ['username'],
  libraries: ['user-sessions.lua'],
  reply: decodeFlag,
});

export const COPY_IF_ABSENT = defineScript('copy-if-absent.lua', {
  keys: ['hash'],
  args: ['fields[]', 'pttlMs'],
  reply: decodeFlag,
});
export const DROP_IF_SAME = defineScript('drop-if-same.lua', {
  keys: ['hash', 'indexes[]'],
  args: ['fields[]', 'member'],
  reply: decodeFlag,
});

export const LOCKOUT = defineScript('lockout.lua', {
  keys: ['counters[]'],
  args: ['op', 'windowMs', 'reservationMs', 'clears', 'limits[]'],
  reply: decodeLockout,
});
export const TAKE_BUCKETS = defineScript('take-buckets.lua', {
  keys: ['buckets[]', 'overrides[]'],
  args: ['policies[]'],
  reply: decodeTakeBuckets,
});

/** All of them: what the tests run and watch. */
export const ALL_SCRIPTS = [
  CREATE_PAIR,
  COUNT_ACTIVE_PAIRS,
  REVOKE_PAIR,
  REVOKE_SUBJECT_PAIRS,
  LIST_PAIRS,
  RECORD_LAST_USE,
  ADD_USER,
  SET_USER_PASSWORD,
  REPLACE_HASH,
  KEEP_VERIFIED_RECORD,
  REMOVE_USER,
  CREATE_SESSION,
  REPLACE_SESSION,
  END_USER_SESSIONS,
  ADOPT_PAIR,
  COPY_IF_ABSENT,
  DROP_IF_SAME,
  LOCKOUT,
  TAKE_BUCKETS,
] as const;

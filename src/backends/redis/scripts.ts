import { defineScript } from './run-script.js';

/**
 * Every script of the Redis backend, each defined once with the names of its KEYS and ARGV
 * (scripts/<file> says what each does). The pair scripts share the index's keys and
 * arguments, and the functions of scripts/pair-index.lua.
 */

const PAIR_KEYS = ['pairs', 'ends', 'active', 'legacy', 'hashes[]'] as const;
const PAIR_ARGS = ['nowMs', 'retainMs', 'subject', 'ids[]'] as const;
const pairScript = <const Keys extends readonly string[], const Args extends readonly string[]>(
  file: string,
  keys: Keys,
  args: Args,
) =>
  defineScript(file, {
    keys: [...PAIR_KEYS, ...keys] as const,
    args: [...PAIR_ARGS, ...args] as const,
    libraries: ['pair-index.lua'],
  });

export const CREATE_PAIR = pairScript(
  'create-pair.lua',
  ['key'],
  ['maxActive', 'id', 'secretHash', 'label', 'createdAt', 'createdMs', 'expiresAt', 'scopes'],
);
export const COUNT_ACTIVE_PAIRS = pairScript('count-active-pairs.lua', [], []);
export const REVOKE_PAIR = pairScript(
  'revoke-pair.lua',
  ['key'],
  ['id', 'revokedAt', 'keepLastActive', 'channel'],
);
export const REVOKE_SUBJECT_PAIRS = pairScript(
  'revoke-subject-pairs.lua',
  [],
  ['revokedAt', 'channel'],
);
export const LIST_PAIRS = pairScript('list-pairs.lua', [], ['limit', 'order', 'after', 'fields[]']);
export const ADOPT_PAIR = pairScript(
  'adopt-pair.lua',
  ['key'],
  ['id', 'fields[]', 'pttlMs', 'channel'],
);

export const RECORD_LAST_USE = defineScript('record-last-use.lua', {
  keys: ['hashes[]'],
  args: ['times[]'],
});
export const ADD_USER = defineScript('add-user.lua', {
  keys: ['user'],
  args: ['passwordHash', 'subject', 'createdAt', 'scopes'],
});
export const SET_USER_PASSWORD = defineScript('set-user-password.lua', {
  keys: ['user'],
  args: ['passwordHash', 'channel'],
});
export const REPLACE_HASH = defineScript('replace-hash.lua', {
  keys: ['hash'],
  args: ['field', 'expected', 'next'],
});
export const KEEP_VERIFIED_RECORD = defineScript('keep-verified-record.lua', {
  keys: ['key'],
  args: ['secretHash', 'record'],
});
export const REMOVE_USER = defineScript('remove-user.lua', {
  keys: ['user'],
  args: ['channel'],
});

export const COPY_IF_ABSENT = defineScript('copy-if-absent.lua', {
  keys: ['hash'],
  args: ['fields[]', 'pttlMs'],
});
export const DROP_IF_SAME = defineScript('drop-if-same.lua', {
  keys: ['hash', 'indexes[]'],
  args: ['fields[]', 'member'],
});

export const LOCKOUT = defineScript('lockout.lua', {
  keys: ['counters[]'],
  args: ['op', 'windowMs', 'reservationMs', 'clears', 'limits[]'],
});
export const TAKE_BUCKETS = defineScript('take-buckets.lua', {
  keys: ['buckets[]', 'overrides[]'],
  args: ['policies[]'],
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
  ADOPT_PAIR,
  COPY_IF_ABSENT,
  DROP_IF_SAME,
  LOCKOUT,
  TAKE_BUCKETS,
] as const;

import type {
  KeyRecord,
  KeyStatus,
  KeySummary,
  UserRecord,
} from '../../credentials/credential-store.js';
import { parseScopeList } from '../../identity/scopes.js';

/**
 * The fields of a pair's hash a listing reads, in this order: all but secret_hash (and
 * rate_limit). list-pairs.lua reads the first four by position.
 */
export const LISTED_FIELDS = [
  'subject',
  'status',
  'revoked_at',
  'expires_at',
  'label',
  'created_at',
  'scopes',
  'last_used_at',
] as const;

/** What a key hash says of a pair, but the hash of its secret; undefined without a subject. */
export function toKeySummary(
  key: string,
  fields: Readonly<Record<string, string | undefined>>,
): KeySummary | undefined {
  const { subject, status } = fields;
  if (subject === undefined) return undefined;
  return {
    key,
    subject,
    label: fields.label ?? '',
    status: (status === 'active' ? 'active' : 'revoked') satisfies KeyStatus,
    createdAt: fields.created_at ?? '',
    revokedAt: fields.revoked_at,
    expiresAt: fields.expires_at,
    scopes: parseScopeList(fields.scopes),
    lastUsedAt: fields.last_used_at,
  };
}

/** A whole key hash (HGETALL) as a pair; undefined without a subject or a secret hash. */
export function toKeyRecord(
  key: string,
  fields: Readonly<Record<string, string | undefined>>,
): KeyRecord | undefined {
  const summary = toKeySummary(key, fields);
  const secretHash = fields.secret_hash;
  if (summary === undefined || secretHash === undefined) return undefined;
  const { secret_bits: bits, verified } = fields;
  return {
    ...summary,
    secretHash,
    // Unreadable: unknown, as absent (no record is kept for the pair).
    ...(bits !== undefined && /^\d{1,4}$/.test(bits) ? { secretBits: Number(bits) } : {}),
    ...(verified === undefined ? {} : { verifiedRecord: verified }),
  };
}

/** A listed pair's values as list-pairs.lua returns them, in LISTED_FIELDS order (null: absent). */
export function listedFields(
  values: readonly (string | null)[],
): Record<string, string | undefined> {
  return Object.fromEntries(LISTED_FIELDS.map((name, i) => [name, values[i] ?? undefined]));
}

/** A whole user hash (HGETALL) as a user; undefined without a password hash or a subject. */
export function toUserRecord(
  username: string,
  fields: Readonly<Record<string, string | undefined>>,
): UserRecord | undefined {
  const { password_hash: passwordHash, subject } = fields;
  if (passwordHash === undefined || subject === undefined) return undefined;
  return {
    username,
    subject,
    passwordHash,
    createdAt: fields.created_at ?? '',
    scopes: parseScopeList(fields.scopes),
    // Unreadable: 0, as absent; a writer that bumps it writes a whole number.
    ...(fields.token_generation !== undefined && /^\d{1,15}$/.test(fields.token_generation)
      ? { tokenGeneration: Number(fields.token_generation) }
      : {}),
  };
}

import type { KeyRecord, KeyRoll, KeySummary, RolledPair } from './credential-store.js';
import { generateKeyPair } from './generate-key-pair.js';
import { parseDurationSec } from './key-expiry.js';

/**
 * Rolling a pair (`POST /keys/{key}/roll`, `keys roll`): a successor with the pair's subject,
 * label, scopes and expiry under a new id and secret, while the rolled pair keeps working for
 * an overlap in which its clients move to the new secret. Pure: both stores apply these rules
 * (the Redis script roll-pair.lua the same ones in Lua), atomically with their checks.
 */

/** The longest overlap: 24 hours (issue 27; Unkey's reroll allows the same). */
export const MAX_ROLL_OVERLAP_SEC = 86_400;

/**
 * The overlap when none is asked for: an hour. Enough for a client fleet to take the new
 * secret in a rolling deploy, yet a secret rolled because it may have leaked is not left
 * working for the day the maximum allows; a leak calls for an overlap of 0.
 */
export const DEFAULT_ROLL_OVERLAP_SEC = 3_600;

/** A refused roll's fixed sentences (never echoing the request). */
export const ROLL_MESSAGES = {
  /** 400 bad_request: the body of `POST /keys/{key}/roll`. */
  body: 'The body must be a JSON object with overlap_sec, or empty.',
  overlap: `overlap_sec must be a whole number of seconds from 0 to ${MAX_ROLL_OVERLAP_SEC} (24 hours).`,
  /** `keys roll --overlap` (exit 2). */
  option: '--overlap must be a duration of at most 24 hours: 0, 90s, 30m, 1h or 24h.',
  /** 409 conflict: there is nothing left to hand over. */
  ended: 'Only a usable key pair can be rolled: this one is revoked or expired.',
  /** 403 forbidden: the successor's secret would give the caller what it does not hold. */
  scopes: 'A key pair can be rolled only by a caller holding all of its scopes.',
  outlive:
    "A key pair that outlives the caller's pair cannot be rolled by it: its successor would outlive it too.",
  /** 409 conflict: a pair `migrate` reports as left in the single-slot layout. */
  unmoved:
    'This key pair is still in the single-slot layout and cannot move from it: revoke it and make another.',
  /** A bug, never an answer: the successor's new id already names a pair (stores throw it). */
  idTaken: "a roll's new key id names another pair already",
} as const;

/**
 * When the rolled pair ends: `overlapSec` after `atMs`, or its own expiry when that comes
 * first (kept as stored). An expiry that does not parse is kept: it counts as past already.
 */
export function rolledEnd(expiresAt: string | undefined, atMs: number, overlapSec: number): string {
  const endMs = atMs + overlapSec * 1000;
  if (expiresAt !== undefined && !(Date.parse(expiresAt) > endMs)) return expiresAt;
  return new Date(endMs).toISOString();
}

/** The pair without its verified record. */
const unrecorded = ({ verifiedRecord: _, ...pair }: KeyRecord): KeyRecord => pair;

/**
 * The rolled pair as the roll leaves it: with no overlap revoked at `roll.at` (its verified
 * record gone, as any revocation deletes it), else ending at rolledEnd. A shortened pair
 * keeps its record: the record proves the secret, never the expiry, which every check reads
 * with it (auth/basic-pair-check.ts), so the record cannot carry the pair past its new end.
 */
export function endedByRoll(pair: KeyRecord, roll: KeyRoll): KeyRecord {
  if (roll.overlapSec === 0) return { ...unrecorded(pair), status: 'revoked', revokedAt: roll.at };
  return { ...pair, expiresAt: rolledEnd(pair.expiresAt, Date.parse(roll.at), roll.overlapSec) };
}

/** The successor of `pair`: its subject, label, scopes and expiry; a new id, secret and age. */
function successorOf(pair: KeySummary, roll: KeyRoll): KeyRecord {
  return {
    key: roll.successor.key,
    subject: pair.subject,
    secretHash: roll.successor.secretHash,
    label: pair.label,
    status: 'active',
    createdAt: roll.at,
    ...(pair.expiresAt === undefined ? {} : { expiresAt: pair.expiresAt }),
    scopes: pair.scopes,
  };
}

/** Both pairs after `roll` of `pair` (as stored when the roll happens). */
export function rollOf(pair: KeyRecord, roll: KeyRoll): RolledPair {
  return { successor: successorOf(pair, roll), rolled: endedByRoll(pair, roll) };
}

/**
 * Whether a pair outlives a Basic caller's own pair, which ends at `callerExpiresAt`
 * (undefined: never): then its successor would too, and rolling it would give a leaked
 * expiring pair a longer-lived secret, as making one would (key-expiry.ts boundByCaller).
 * An expiry that does not parse counts as past for the caller, as never for the pair.
 */
export function outlivesCaller(
  expiresAt: string | undefined,
  callerExpiresAt: string | undefined,
): boolean {
  if (callerExpiresAt === undefined) return false;
  const callerEndsMs = Date.parse(callerExpiresAt);
  return expiresAt === undefined || !(Date.parse(expiresAt) <= callerEndsMs);
}

/**
 * `keys roll --overlap`: a duration as `keys create --expires` takes one (`30m`, `1h`,
 * `3600s`), or `0` alone, of at most 24 hours; undefined for anything else.
 */
export function parseOverlapOption(text: string): number | undefined {
  const seconds = text === '0' ? 0 : parseDurationSec(text);
  return seconds !== undefined && seconds <= MAX_ROLL_OVERLAP_SEC ? seconds : undefined;
}

/**
 * A roll of `key` into a new pair of `subject` made now, its secret hashed by `hash`: what the
 * store is asked (rollKey), and the secret to show this once. The API and the CLI both make it.
 */
export async function newRoll(
  key: string,
  subject: string,
  overlapSec: number,
  nowMs: number,
  hash: (secret: string) => Promise<string>,
): Promise<{ readonly roll: KeyRoll; readonly secret: string }> {
  const made = generateKeyPair(subject);
  const successor = { key: made.key, secretHash: await hash(made.secret) };
  return {
    roll: { key, successor, at: new Date(nowMs).toISOString(), overlapSec },
    secret: made.secret,
  };
}

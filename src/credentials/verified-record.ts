import {
  createHmac,
  createSecretKey,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { decodeFleetKey, FLEET_KEY_BYTES } from '../identity/fleet-key-text.js';

/**
 * A verified record: a gateway's proof, kept beside a pair in the store, that the pair's
 * secret matched the pair's bcrypt hash. Any gateway or worker holding the fleet key checks
 * it with one HMAC-SHA-256 instead of a bcrypt run:
 *
 *   record = "v1." fleet-key-id "." ends-at-ms "." base64url(first 16 bytes of HMAC(fleet key, message))
 *   message = "accounts-gateway verified record v1\n" JSON([key, secret hash, ends-at-ms, secret])
 *
 * The stored hash is inside the MAC, so a record over another hash (the secret changed, the
 * pair was re-hashed) proves nothing; the key id is inside, so a record copied from another
 * pair proves nothing; the end is inside, so it cannot be moved. Status, expiry and scopes are
 * not: they are read with the record, in the same read, and decide as they do after bcrypt.
 *
 * The MAC is cut to 128 bits (RFC 2104 §5 allows it down to half the hash; forging one still
 * takes 2^128 tries): the whole record is then 48 bytes, under Redis's listpack limit for a hash
 * value (`hash-max-listpack-value`, 64), so a pair's hash stays in the compact encoding.
 *
 * Only secrets carrying at least 128 bits of entropy get one (strongSecret): whoever holds
 * the fleet key and a copy of the store can test guesses at a hash's speed instead of
 * bcrypt's, which is harmless only when guessing is hopeless (docs/security.md).
 */

const VERSION = 'v1';
const DOMAIN = 'accounts-gateway verified record v1\n';

/** The entropy below which a secret never gets a record. */
export const MIN_RECORD_SECRET_BITS = 128;

/** The form of the gateway's own secrets (generate-key-pair.ts): 48 base62, ~285 bits. */
const GENERATED_SECRET = /^[0-9A-Za-z]{48}$/;

/** Bytes of the HMAC kept in a record. */
const MAC_BYTES = 16;

const RECORD = /^v1\.([0-9a-f]{8})\.(\d{1,15})\.([A-Za-z0-9_-]{22})$/;

export interface FleetKey {
  /** 8 hex digits naming the key in each record, so a fleet split over two keys is told. */
  readonly id: string;
  readonly key: KeyObject;
}

/** The pair a record speaks for. */
export interface RecordedPair {
  readonly key: string;
  readonly secret: string;
  /** The stored bcrypt hash the secret was checked against. */
  readonly secretHash: string;
}

/**
 * What a check found: `hit` the record proves the pair; `absent` none; `ended` past its end;
 * `other_key` made under another fleet key; `refused` a live record under this key that does
 * not prove this pair (a wrong secret, a forged or copied record, another hash).
 */
export type RecordCheck = 'hit' | 'absent' | 'ended' | 'other_key' | 'refused';

/** A new fleet key as the store keeps it: 32 random bytes, base64url. */
export function newFleetKeyText(): string {
  return randomBytes(FLEET_KEY_BYTES).toString('base64url');
}

/** A fleet key from its text (identity/fleet-key-text.ts); undefined when it is none. */
export function parseFleetKey(text: string): FleetKey | undefined {
  const bytes = decodeFleetKey(text);
  if (bytes === undefined) return undefined;
  const key = createSecretKey(bytes);
  // Derived, not a slice of the key: the id says nothing about the key's bytes.
  const id = createHmac('sha256', key).update('fleet key id').digest('hex').slice(0, 8);
  return { id, key };
}

/**
 * True when a record may be kept for this secret: the gateway's own generated form, or a
 * writer's pair marked with `secret_bits` of at least 128 (docs/redis-layout.md).
 */
export function strongSecret(secret: string, secretBits: number | undefined): boolean {
  return (secretBits ?? 0) >= MIN_RECORD_SECRET_BITS || GENERATED_SECRET.test(secret);
}

function mac(fleet: FleetKey, pair: RecordedPair, endsAtMs: number): Buffer {
  const message = DOMAIN + JSON.stringify([pair.key, pair.secretHash, endsAtMs, pair.secret]);
  return createHmac('sha256', fleet.key).update(message).digest().subarray(0, MAC_BYTES);
}

/** The record proving `pair` until `endsAtMs`. */
export function formatVerifiedRecord(
  fleet: FleetKey,
  pair: RecordedPair,
  endsAtMs: number,
): string {
  const endsAt = Math.floor(endsAtMs);
  return `${VERSION}.${fleet.id}.${endsAt}.${mac(fleet, pair, endsAt).toString('base64url')}`;
}

/** When a record in the record form ends; undefined for anything else. */
export function recordEnd(text: string | undefined): number | undefined {
  const match = text === undefined ? null : RECORD.exec(text);
  return match === null ? undefined : Number(match[2]);
}

/**
 * Checks `text` for `pair` at `nowMs`. Computes one HMAC whatever it finds (over a record
 * that cannot match when there is none), so that how long a check takes says nothing about
 * whether a pair has a record. The comparison is constant-time.
 */
export function checkVerifiedRecord(
  fleet: FleetKey,
  text: string | undefined,
  pair: RecordedPair,
  nowMs: number,
): RecordCheck {
  const match = text === undefined ? null : RECORD.exec(text);
  const endsAt = match === null ? 0 : Number(match[2]);
  const computed = mac(fleet, pair, endsAt);
  if (match === null) return 'absent';
  if (match[1] !== fleet.id) return 'other_key';
  if (!(endsAt > nowMs)) return 'ended';
  const given = Buffer.from(match[3] ?? '', 'base64url');
  return given.length === computed.length && timingSafeEqual(given, computed) ? 'hit' : 'refused';
}

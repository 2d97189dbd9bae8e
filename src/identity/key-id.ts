import { hash } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Self-describing key ids: `ak_` + the owning subject's shard tag + `_` + a random part + a
 * checksum, e.g. `ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX`.
 *
 *   key-id   = "ak_" tag "_" random checksum           ; 39 characters
 *   tag      = 5 lowercase hex                         ; subjectTag(subject)
 *   random   = 24 base62                               ; ~143 bits from the CSPRNG
 *   checksum = 6 base62                                ; CRC32 of the 33 characters before it
 *
 * The tag is there so that a layout sharded by subject can keep everything of the subject
 * (its pairs, indexes, rate buckets) under one Redis Cluster hash tag and find a pair's keys
 * from its id alone (layout.ts). The prefix and the
 * checksum follow GitHub's token format (https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/:
 * a prefix for scanners, "the last six characters ... a 32-bit checksum" in base62): a
 * scanner can tell a leaked id from a look-alike without asking anyone, and the gateway
 * refuses a mistyped or forged id before any store read or bcrypt.
 *
 * Why CRC32 catches every single-character change: in the 33 characters it covers, a change
 * alters one byte, an error burst of at most 8 bits, and a CRC of degree 32 detects every
 * burst up to 32 bits long; in the checksum itself, a change gives another 6-digit base-62
 * number, and the encoding is one-to-one. Adjacent transpositions inside the covered part
 * are bursts of at most 16 bits: caught too. A random forgery passes with odds 2^-32.
 */

/** Base62 digits in value order: `0-9A-Za-z`. Random parts and the checksum use it. */
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export const KEY_ID_PREFIX = 'ak_';
/**
 * The longest key a Basic pair may name, in UTF-16 code units (a string's length, not its code
 * points): the authenticator refuses a longer one before any compare, so no lockout counts it.
 */
export const MAX_KEY_CHARS = 128;
/**
 * Hex characters of SHA-256(subject) in a tag. 5 (16^5 = 1,048,576 tags) is the fewest that
 * reach every one of Redis Cluster's 16,384 slots (CRC16 of the tag): measured over all
 * tags, 4 hex characters reach 13,152 slots (up to 12 tags in one, none in 3,232) and give
 * each of 1,000 equal masters between 0.79 and 1.28 times its share; 5 give every slot
 * 47-85 tags (mean 64) and each of 1,000 masters 0.94-1.08 times its share, each of 3 or 10
 * exactly its share to 0.1%. A 6th character would buy little for a longer id.
 */
export const SUBJECT_TAG_LENGTH = 5;
/** Base62 characters of the random part: today's `ak_` + 24 ids carry the same entropy. */
export const KEY_ID_RANDOM_LENGTH = 24;
/** 62^6 > 2^32: six base-62 digits hold any CRC32. */
const CHECKSUM_LENGTH = 6;
const BODY_LENGTH = KEY_ID_PREFIX.length + SUBJECT_TAG_LENGTH + 1 + KEY_ID_RANDOM_LENGTH;
/** Every self-describing id has exactly this length (39), inside KEY_ID's 3-64. */
export const TAGGED_KEY_ID_LENGTH = BODY_LENGTH + CHECKSUM_LENGTH;

const TAG_SOURCE = `[0-9a-f]{${SUBJECT_TAG_LENGTH}}`;
/** The random part and the checksum, one run of base62. */
const TAIL_SOURCE = `[0-9A-Za-z]{${KEY_ID_RANDOM_LENGTH + CHECKSUM_LENGTH}}`;
/**
 * What a secret scanner searches for (docs/redis-layout.md gives it verbatim); a hit is an id when
 * its checksum holds (`parseKeyId`). `\b` fits: `_` is a word character, so it neither ends a match
 * early nor lets `xak_…` match.
 */
export const TAGGED_KEY_ID_SOURCE = `\\b${KEY_ID_PREFIX}${TAG_SOURCE}_${TAIL_SOURCE}\\b`;

const TAG = new RegExp(`^${TAG_SOURCE}$`);
const RANDOM = new RegExp(`^[0-9A-Za-z]{${KEY_ID_RANDOM_LENGTH}}$`);
const TAGGED = new RegExp(`^${KEY_ID_PREFIX}(${TAG_SOURCE})_${TAIL_SOURCE}$`);

/**
 * A subject's shard tag: the first 5 hex characters of SHA-256 of the subject's UTF-8
 * bytes, so that any language computes it in one line
 * (`printf %s alice | sha256sum | cut -c1-5` gives `2bd80`).
 */
export function subjectTag(subject: string): string {
  return hash('sha256', subject, 'hex').slice(0, SUBJECT_TAG_LENGTH);
}

/** CRC32 (IEEE 802.3, as zlib, PHP's crc32 and Python's zlib.crc32) in six base-62 digits. */
function checksum(body: string): string {
  let value = crc32(body);
  let digits = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i += 1) {
    digits = BASE62.charAt(value % 62) + digits;
    value = Math.floor(value / 62);
  }
  return digits;
}

/**
 * The id for a tag and a random part, with its checksum. Throws a TypeError for parts of the
 * wrong shape: a programming error, and an id written with one could never be used.
 */
export function formatKeyId(tag: string, random: string): string {
  if (!TAG.test(tag)) throw new TypeError(`a tag is ${SUBJECT_TAG_LENGTH} lowercase hex digits`);
  if (!RANDOM.test(random))
    throw new TypeError(`a random part is ${KEY_ID_RANDOM_LENGTH} base62 characters`);
  const body = `${KEY_ID_PREFIX}${tag}_${random}`;
  return body + checksum(body);
}

/**
 * - `tagged`: a self-describing id whose checksum holds; `tag` is its subject's shard tag.
 * - `untagged`: any other id (the earlier `ak_` + 24 ids, ids another service wrote),
 *   looked up as it is.
 * - `malformed`: 39 characters starting with `ak_`, the new form's length and prefix, but
 *   not a valid one (a character changed, a forged checksum): no stored pair can have it,
 *   so it is refused before any store read or bcrypt.
 */
export type ParsedKeyId =
  | { readonly kind: 'tagged'; readonly tag: string }
  | { readonly kind: 'untagged' }
  | { readonly kind: 'malformed' };

const UNTAGGED: ParsedKeyId = { kind: 'untagged' };
const MALFORMED: ParsedKeyId = { kind: 'malformed' };

/**
 * Reads an id by its length and prefix first, so that a single changed character anywhere
 * after `ak_` (a separator, a tag digit, the checksum) still lands in `malformed` rather
 * than `untagged`, and costs no store read.
 */
export function parseKeyId(id: string): ParsedKeyId {
  if (id.length !== TAGGED_KEY_ID_LENGTH || !id.startsWith(KEY_ID_PREFIX)) return UNTAGGED;
  const tag = TAGGED.exec(id)?.[1];
  if (tag === undefined) return MALFORMED;
  const body = id.slice(0, BODY_LENGTH);
  return id.slice(BODY_LENGTH) === checksum(body) ? { kind: 'tagged', tag } : MALFORMED;
}

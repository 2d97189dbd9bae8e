import bcrypt from 'bcrypt';
import { BCRYPT_HASH } from '../identity/identity-formats.js';

/** bcrypt only reads the first 72 bytes: longer secrets are refused, never truncated. */
export const MAX_SECRET_BYTES = 72;

export interface SecretHasher {
  hash(secret: string): Promise<string>;
  /** False for a malformed stored hash too: bcrypt accepts e.g. a NUL-suffixed one. */
  verify(secret: string, hash: string): Promise<boolean>;
}

/** What a stored hash's prefix says: `$<variant>$<cost>$`. */
export interface BcryptParameters {
  readonly variant: '2a' | '2b' | '2y';
  /** log2 of the rounds: each step up doubles the work of one compare. */
  readonly cost: number;
}

export function createSecretHasher(cost: number): SecretHasher {
  return {
    hash: (secret) => bcrypt.hash(secret, cost),
    verify: (secret, hash) =>
      BCRYPT_HASH.pattern.test(hash)
        ? bcrypt.compare(secret, asReadableHash(hash))
        : Promise.resolve(false),
  };
}

export function isWellFormedHash(hash: string): boolean {
  return BCRYPT_HASH.pattern.test(hash);
}

/**
 * The variant and cost of a hash bcrypt computes; undefined for anything else, a cost outside
 * 4-31 included (bcrypt answers false for those at once, without any work).
 */
export function readBcryptHash(hash: string): BcryptParameters | undefined {
  if (!BCRYPT_HASH.pattern.test(hash)) return undefined;
  const cost = Number(hash.slice(4, 6));
  if (cost < 4 || cost > 31) return undefined;
  return { variant: hash.slice(1, 3) as BcryptParameters['variant'], cost };
}

/**
 * `$2y$` is crypt_blowfish's name for the correct algorithm (PHP's password_hash and
 * htpasswd -B write it); OpenBSD named the same fix `$2b$`. For secrets of at most 72 bytes
 * (all this gateway accepts) they compute the same hash, but the bcrypt package reads only
 * `$2a$` and `$2b$`, and answers false for `$2y$`: it is handed the same hash under the name
 * it reads.
 */
function asReadableHash(hash: string): string {
  return hash.startsWith('$2y$') ? `$2b$${hash.slice(4)}` : hash;
}

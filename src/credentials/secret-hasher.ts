import bcrypt from 'bcrypt';
import { BCRYPT_HASH } from '../identity/identity-formats.js';

/** bcrypt only reads the first 72 bytes: longer secrets are refused, never truncated. */
export const MAX_SECRET_BYTES = 72;

export interface SecretHasher {
  hash(secret: string): Promise<string>;
  /** False for a malformed stored hash too: bcrypt accepts e.g. a NUL-suffixed one. */
  verify(secret: string, hash: string): Promise<boolean>;
}

export function createSecretHasher(cost: number): SecretHasher {
  return {
    hash: (secret) => bcrypt.hash(secret, cost),
    verify: (secret, hash) =>
      BCRYPT_HASH.pattern.test(hash) ? bcrypt.compare(secret, hash) : Promise.resolve(false),
  };
}

export function isWellFormedHash(hash: string): boolean {
  return BCRYPT_HASH.pattern.test(hash);
}

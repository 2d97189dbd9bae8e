import bcrypt from 'bcrypt';

/** bcrypt only reads the first 72 bytes: longer secrets are refused, never truncated. */
export const MAX_SECRET_BYTES = 72;
const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

export interface SecretHasher {
  hash(secret: string): Promise<string>;
  /** False for a malformed stored hash too: bcrypt accepts e.g. a NUL-suffixed one. */
  verify(secret: string, hash: string): Promise<boolean>;
}

export function createSecretHasher(cost: number): SecretHasher {
  return {
    hash: (secret) => bcrypt.hash(secret, cost),
    verify: (secret, hash) =>
      BCRYPT_HASH.test(hash) ? bcrypt.compare(secret, hash) : Promise.resolve(false),
  };
}

export function isWellFormedHash(hash: string): boolean {
  return BCRYPT_HASH.test(hash);
}

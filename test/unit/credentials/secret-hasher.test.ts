import { describe, expect, it } from 'vitest';
import { createSecretHasher, readBcryptHash } from '../../../src/credentials/secret-hasher.js';
import { htpasswdHash, PHP_WRITTEN } from '../../support/foreign-hashes.js';

const hasher = createSecretHasher(4);

describe('createSecretHasher: verify', () => {
  it('verifies a $2y$ hash that htpasswd -nbBC 10 writes, and refuses a wrong secret against it', async () => {
    // A non-ASCII character too: 8-bit bytes are where bcrypt's variants once differed.
    const secret = 'htpasswd-written secret £ 0123456789';
    const hash = await htpasswdHash(secret);

    await expect(hasher.verify(secret, hash)).resolves.toBe(true);
    await expect(hasher.verify(`${secret}x`, hash)).resolves.toBe(false);
  });

  it("verifies a $2y$ hash in PHP's password_hash form", async () => {
    await expect(hasher.verify(PHP_WRITTEN.secret, PHP_WRITTEN.hash)).resolves.toBe(true);
    await expect(hasher.verify('php-written password', PHP_WRITTEN.hash)).resolves.toBe(false);
  });

  it('verifies the $2a$, $2b$ and $2y$ spellings of one hash alike (the same algorithm)', async () => {
    const tail = PHP_WRITTEN.hash.slice(4);
    for (const variant of ['2a', '2b', '2y']) {
      await expect(hasher.verify(PHP_WRITTEN.secret, `$${variant}$${tail}`), variant).resolves.toBe(
        true,
      );
    }
  });

  it('refuses a hash in any other form, $2x$ and a NUL suffix included', async () => {
    const { secret, hash } = PHP_WRITTEN;
    await expect(hasher.verify(secret, `$2x$${hash.slice(4)}`)).resolves.toBe(false);
    await expect(hasher.verify(secret, `${hash}\u0000`)).resolves.toBe(false);
  });
});

describe('readBcryptHash', () => {
  it('reads the variant and cost of a hash, and nothing from a malformed one', () => {
    const tail = PHP_WRITTEN.hash.slice(7);
    expect(readBcryptHash(PHP_WRITTEN.hash)).toEqual({ variant: '2y', cost: 10 });
    expect(readBcryptHash(`$2b$04$${tail}`)).toEqual({ variant: '2b', cost: 4 });
    expect(readBcryptHash(`$2x$10$${tail}`)).toBeUndefined();
    expect(readBcryptHash(`$2b$03$${tail}`)).toBeUndefined();
    expect(readBcryptHash(`$2b$32$${tail}`)).toBeUndefined();
    expect(readBcryptHash('')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { createTokenUserCheck } from '../../../../src/auth/jwt/check-token-user.js';
import type { UserRecord } from '../../../../src/credentials/credential-store.js';
import { GatewayError } from '../../../../src/errors/gateway-error.js';

const USER: UserRecord = {
  username: 'una',
  subject: 'subject-una',
  passwordHash: '$2b$04$abcdefghijklmnopqrstuu5EUcGdDmdQSkFbxZwaMNyjm2qUZkAZK',
  createdAt: '2030-01-01T00:00:00.000Z',
  scopes: [],
};

const checkWith = (user: UserRecord | undefined | 'down') =>
  createTokenUserCheck(
    {
      getUser: () =>
        user === 'down'
          ? Promise.reject(new GatewayError('credential_store_unavailable'))
          : Promise.resolve(user),
    },
    'gen',
  );

const claims = (extra: object = {}) => ({
  sub: 'subject-una',
  preferred_username: 'una',
  ...extra,
});

describe('createTokenUserCheck', () => {
  it('accepts a token of an existing user at its generation (absent on both sides: 0)', async () => {
    expect(await checkWith(USER)(claims())).toBe(true);
    expect(await checkWith({ ...USER, tokenGeneration: 3 })(claims({ gen: 3 }))).toBe(true);
  });

  it('refuses a token issued before a password change, of a removed user, or of another subject', async () => {
    expect(await checkWith({ ...USER, tokenGeneration: 1 })(claims())).toBe(false);
    expect(await checkWith({ ...USER, tokenGeneration: 2 })(claims({ gen: 1 }))).toBe(false);
    expect(await checkWith(undefined)(claims())).toBe(false);
    expect(await checkWith({ ...USER, subject: 'someone-else' })(claims())).toBe(false);
    expect(await checkWith(USER)({ sub: 'subject-una' })).toBe(false);
  });

  it('rejects, never refuses, when the store cannot answer', async () => {
    await expect(checkWith('down')(claims())).rejects.toMatchObject({
      code: 'credential_store_unavailable',
    });
  });
});

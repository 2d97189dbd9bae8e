import { describe, expect, it } from 'vitest';
import {
  CREATE_KEY_MESSAGES,
  EXPIRY_MESSAGES,
  LOGIN_MESSAGES,
  SCOPES_MESSAGE,
} from '../../../src/errors/gateway-error.js';
import { createKeySchema, loginSchema } from '../../../src/openapi/api-schemas.js';

/** The sentence the endpoint answers with: the first issue's. */
function firstMessage(schema: typeof loginSchema | typeof createKeySchema, body: unknown) {
  const parsed = schema.safeParse(body);
  return parsed.success ? 'valid' : parsed.error.issues[0]?.message;
}

describe('the request body schemas', () => {
  it.each([
    [undefined, LOGIN_MESSAGES.body],
    [[], LOGIN_MESSAGES.body],
    [{ password: 'p' }, LOGIN_MESSAGES.usernameMissing],
    [{ username: 'a b', password: 'p' }, LOGIN_MESSAGES.username],
    [{ username: 7 }, LOGIN_MESSAGES.username],
    [{ username: 'alice' }, LOGIN_MESSAGES.passwordMissing],
    [{ username: 'alice', password: '' }, LOGIN_MESSAGES.password],
    [{ username: 'alice', password: 'p'.repeat(1025) }, LOGIN_MESSAGES.password],
    [{ username: 'alice', password: 'p', extra: true }, 'valid'],
  ])('refuses the login %j first with its fixed sentence', (body, message) => {
    expect(firstMessage(loginSchema, body)).toBe(message);
  });

  it.each([
    [null, CREATE_KEY_MESSAGES.body],
    ['label', CREATE_KEY_MESSAGES.body],
    [{ label: 'a\u0007' }, CREATE_KEY_MESSAGES.label],
    [{ label: 'x'.repeat(201), scopes: 'a' }, CREATE_KEY_MESSAGES.label],
    [{ expires_in: 1.5 }, EXPIRY_MESSAGES.expiresIn],
    [{ expires_in: 0 }, EXPIRY_MESSAGES.expiresIn],
    [{ expires_at: 5 }, EXPIRY_MESSAGES.expiresAt],
    [{ scopes: ['a', 'a'] }, SCOPES_MESSAGE],
    [{ scopes: ['a b'] }, SCOPES_MESSAGE],
    [{ scopes: Array.from({ length: 65 }, (_, i) => `s${i}`) }, SCOPES_MESSAGE],
    [{ label: 'ok', expires_in: 60, scopes: ['a'] }, 'valid'],
  ])('refuses the new pair %j first with its fixed sentence', (body, message) => {
    expect(firstMessage(createKeySchema, body)).toBe(message);
  });
});

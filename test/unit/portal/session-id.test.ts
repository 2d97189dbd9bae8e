import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { subjectTag } from '../../../src/identity/key-id.js';
import {
  csrfTokenOf,
  newFormNonce,
  newSessionId,
  sameToken,
  sessionRefOf,
} from '../../../src/portal/session-id.js';

describe('session ids', () => {
  it("carry the user's tag and 256 random bits, different every time", () => {
    const id = newSessionId('alice');
    expect(id).toMatch(/^[0-9a-f]{5}\.[A-Za-z0-9_-]{43}$/);
    expect(id.slice(0, 5)).toBe(subjectTag('alice'));
    expect(newSessionId('alice')).not.toBe(id);
  });

  it('are kept as the SHA-256 of the whole id, under the tag they carry', () => {
    const id = newSessionId('bob');
    expect(sessionRefOf(id)).toEqual({
      tag: subjectTag('bob'),
      idHash: createHash('sha256').update(id).digest('hex'),
    });
  });

  it('are refused in any other form, before any store read', () => {
    for (const value of [
      '',
      'abcde',
      'ABCDE.' + 'a'.repeat(43),
      'abcde.' + 'a'.repeat(42),
      'abcde.' + '+'.repeat(43),
    ])
      expect(sessionRefOf(value)).toBeUndefined();
  });
});

describe('CSRF tokens', () => {
  it('are one per session, the same at every ask, and unlike the session id', () => {
    const id = newSessionId('alice');
    const token = csrfTokenOf(id);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrfTokenOf(id)).toBe(token);
    expect(csrfTokenOf(newSessionId('alice'))).not.toBe(token);
    expect(token).not.toContain(id.slice(6));
  });

  it('are compared whole: a missing, shorter, longer or other token is refused', () => {
    const token = csrfTokenOf(newSessionId('alice'));
    expect(sameToken(token, token)).toBe(true);
    expect(sameToken(undefined, token)).toBe(false);
    expect(sameToken('', token)).toBe(false);
    expect(sameToken(token.slice(1), token)).toBe(false);
    expect(sameToken(`${token}x`, token)).toBe(false);
    expect(sameToken(csrfTokenOf(newSessionId('alice')), token)).toBe(false);
  });

  it('form nonces are 128 random bits, new every time', () => {
    expect(newFormNonce()).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(newFormNonce()).not.toBe(newFormNonce());
  });
});

import { describe, expect, it } from 'vitest';
import {
  clearedCookie,
  readCookie,
  sessionCookie,
  sessionCookieName,
} from '../../../src/portal/cookies.js';

describe('the session cookie', () => {
  it('is __Host- prefixed only when Secure, as RFC 6265bis requires of the prefix', () => {
    expect(sessionCookieName(true)).toBe('__Host-ag_session');
    expect(sessionCookieName(false)).toBe('ag_session');
  });

  it('is set HttpOnly, SameSite=Strict, Path=/, without Domain or Max-Age, Secure under TLS', () => {
    expect(sessionCookie('__Host-ag_session', 'abcde.xyz', true)).toBe(
      '__Host-ag_session=abcde.xyz; Path=/; HttpOnly; SameSite=Strict; Secure',
    );
    expect(sessionCookie('ag_session', 'abcde.xyz', false)).toBe(
      'ag_session=abcde.xyz; Path=/; HttpOnly; SameSite=Strict',
    );
  });

  it('is removed with an empty value and Max-Age=0, with the same attributes', () => {
    expect(clearedCookie('__Host-ag_session', true)).toBe(
      '__Host-ag_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure',
    );
  });

  it('is read from a Cookie header among others, spaces around its pairs ignored', () => {
    expect(readCookie('a=1; ag_session=abc.def ;b=2', 'ag_session')).toBe('abc.def');
    expect(readCookie(['a=1', 'ag_session=xyz'], 'ag_session')).toBe('xyz');
    expect(readCookie('ag_session_other=1; xag_session=2', 'ag_session')).toBeUndefined();
    expect(readCookie(undefined, 'ag_session')).toBeUndefined();
    expect(readCookie('', 'ag_session')).toBeUndefined();
  });

  it('counts as absent when sent twice, so a cookie set by a sibling cannot stand in for it', () => {
    expect(readCookie('ag_session=one; ag_session=two', 'ag_session')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import {
  boundByCaller,
  EXPIRY_MESSAGES,
  MAX_KEY_LIFETIME_SEC,
  parseExpiresOption,
  parseExpiryRequest,
  parseRfc3339,
} from '../../../src/credentials/key-expiry.js';
import { isExpired, type KeyRecord } from '../../../src/credentials/credential-store.js';
import { keyView } from '../../../src/credentials/key-view.js';
import { OUTLIVE_MESSAGE } from '../../../src/errors/gateway-error.js';

const NOW = Date.parse('2030-06-01T12:00:00.000Z');

describe('parseRfc3339', () => {
  it('reads a date-time with Z or a numeric offset, with or without a fraction', () => {
    expect(parseRfc3339('2030-06-01T12:00:00Z')).toBe(NOW);
    expect(parseRfc3339('2030-06-01t14:00:00.000+02:00')).toBe(NOW);
    expect(parseRfc3339('2030-06-01T07:30:00.123456-04:30')).toBe(NOW + 123);
  });

  it('refuses a time without an offset, an impossible date, a leap second and other shapes', () => {
    for (const text of [
      '2030-06-01T12:00:00',
      '2030-02-30T00:00:00Z',
      '2030-13-01T00:00:00Z',
      '2030-06-01T24:00:00Z',
      '2030-06-30T23:59:60Z',
      '2030-06-01 12:00:00Z',
      '2030-06-01',
      '1780315200',
      '2030-06-01T12:00:00+0200',
    ])
      expect(parseRfc3339(text), text).toBeUndefined();
  });
});

describe('parseExpiryRequest', () => {
  it('sets no expiry when neither member is given', () => {
    expect(parseExpiryRequest(undefined, undefined, NOW)).toEqual({
      ok: true,
      expiresAt: undefined,
    });
  });

  it('counts expires_in seconds from now and writes the time in UTC', () => {
    expect(parseExpiryRequest(3600, undefined, NOW)).toEqual({
      ok: true,
      expiresAt: '2030-06-01T13:00:00.000Z',
    });
  });

  it('normalizes expires_at to UTC', () => {
    expect(parseExpiryRequest(undefined, '2030-06-02T00:00:00+02:00', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-06-01T22:00:00.000Z',
    });
  });

  it('refuses both members at once, saying why', () => {
    expect(parseExpiryRequest(60, '2031-01-01T00:00:00Z', NOW)).toEqual({
      ok: false,
      message: EXPIRY_MESSAGES.both,
    });
  });

  it('refuses an expires_in that is not a whole number of seconds from 1 to ten years', () => {
    for (const value of [0, -1, 1.5, '60', null, MAX_KEY_LIFETIME_SEC + 1])
      expect(parseExpiryRequest(value, undefined, NOW)).toEqual({
        ok: false,
        message: EXPIRY_MESSAGES.expiresIn,
      });
    expect(parseExpiryRequest(MAX_KEY_LIFETIME_SEC, undefined, NOW).ok).toBe(true);
  });

  it('refuses an expires_at in the past, now, beyond ten years, or not RFC 3339', () => {
    for (const value of [
      '2030-06-01T12:00:00Z',
      '2020-01-01T00:00:00Z',
      '2041-01-01T00:00:00Z',
      '2031-01-01',
      1_900_000_000,
    ])
      expect(parseExpiryRequest(undefined, value, NOW)).toEqual({
        ok: false,
        message: EXPIRY_MESSAGES.expiresAt,
      });
  });

  it('says the same ten years in its message as the bound it applies', () => {
    expect(EXPIRY_MESSAGES.expiresIn).toContain(String(MAX_KEY_LIFETIME_SEC));
  });
});

describe('parseExpiresOption', () => {
  it('reads durations in s, m, h and d, and RFC 3339 times', () => {
    expect(parseExpiresOption('3600s', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-06-01T13:00:00.000Z',
    });
    expect(parseExpiresOption('30m', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-06-01T12:30:00.000Z',
    });
    expect(parseExpiresOption('12h', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-06-02T00:00:00.000Z',
    });
    expect(parseExpiresOption('90d', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-08-30T12:00:00.000Z',
    });
    expect(parseExpiresOption('2030-07-01T00:00:00Z', NOW)).toEqual({
      ok: true,
      expiresAt: '2030-07-01T00:00:00.000Z',
    });
  });

  it('refuses zero, units it does not know, more than ten years and past times', () => {
    for (const text of ['0s', '5w', '3651d', '90', 'soon', '2020-01-01T00:00:00Z'])
      expect(parseExpiresOption(text, NOW), text).toEqual({
        ok: false,
        message: EXPIRY_MESSAGES.option,
      });
  });
});

describe('a pair view at a time', () => {
  const pair: KeyRecord = {
    key: 'ak_view',
    subject: 'alice',
    secretHash: 'x',
    label: '',
    status: 'active',
    createdAt: '2030-01-01T00:00:00.000Z',
    scopes: [],
    expiresAt: '2030-06-01T12:00:00.000Z',
  };

  it('shows active before the expiry and expired from it on, with expires_at', () => {
    expect(keyView(pair, NOW - 1)).toMatchObject({ status: 'active', expires_at: pair.expiresAt });
    expect(keyView(pair, NOW)).toMatchObject({ status: 'expired', expires_at: pair.expiresAt });
  });

  it('shows revoked for a revoked pair whatever its expiry, and null for no expiry', () => {
    expect(keyView({ ...pair, status: 'revoked' }, NOW + 1)).toMatchObject({ status: 'revoked' });
    expect(keyView({ ...pair, expiresAt: undefined }, NOW)).toMatchObject({
      status: 'active',
      expires_at: null,
    });
  });

  it('treats an expiry it cannot read as past', () => {
    expect(isExpired({ ...pair, expiresAt: 'soon' }, 0)).toBe(true);
  });
});

describe('boundByCaller', () => {
  const callerEnds = '2030-06-01T13:00:00.000Z';

  it("gives a new pair the caller's expiry when none is asked", () => {
    expect(boundByCaller(undefined, callerEnds)).toEqual({ ok: true, expiresAt: callerEnds });
  });

  it("inherits another writer's spelling of the caller's expiry in the UTC form the stores compare", () => {
    expect(boundByCaller(undefined, '2030-06-01T14:00:00+01:00')).toEqual({
      ok: true,
      expiresAt: callerEnds,
    });
    expect(boundByCaller(undefined, '2030-06-01T13:00:00Z')).toEqual({
      ok: true,
      expiresAt: callerEnds,
    });
  });

  it("keeps an asked expiry up to the caller's own, and refuses a later one", () => {
    const earlier = '2030-06-01T12:30:00.000Z';
    expect(boundByCaller(earlier, callerEnds)).toEqual({ ok: true, expiresAt: earlier });
    expect(boundByCaller(callerEnds, callerEnds)).toEqual({ ok: true, expiresAt: callerEnds });
    expect(boundByCaller('2030-06-01T13:00:00.001Z', callerEnds)).toEqual({
      ok: false,
      message: OUTLIVE_MESSAGE,
    });
  });

  it('binds nothing when the caller never expires, and refuses when its expiry cannot be read', () => {
    expect(boundByCaller(undefined, undefined)).toEqual({ ok: true, expiresAt: undefined });
    expect(boundByCaller(callerEnds, undefined)).toEqual({ ok: true, expiresAt: callerEnds });
    expect(boundByCaller(callerEnds, 'soon')).toEqual({ ok: false, message: OUTLIVE_MESSAGE });
  });
});

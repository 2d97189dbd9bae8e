import { describe, expect, it } from 'vitest';
import type { KeyRecord, KeyRoll } from '../../../src/credentials/credential-store.js';
import {
  endedByRoll,
  MAX_ROLL_OVERLAP_SEC,
  outlivesCaller,
  parseOverlapOption,
  rolledEnd,
  rollOf,
} from '../../../src/credentials/key-roll.js';

const AT_MS = Date.parse('2030-01-01T12:00:00.000Z');
const AT = new Date(AT_MS).toISOString();
const iso = (ms: number): string => new Date(ms).toISOString();

const PAIR: KeyRecord = {
  key: 'ak_rolled',
  subject: 'alice',
  secretHash: '$2b$04$old',
  label: 'ci runner',
  status: 'active',
  createdAt: '2029-06-01T00:00:00.000Z',
  expiresAt: '2031-01-01T00:00:00.000Z',
  scopes: ['accounts:read', 'keys'],
  lastUsedAt: '2029-12-31T00:00:00.000Z',
  verifiedRecord: 'v1.record',
};

const roll = (overlapSec: number): KeyRoll => ({
  key: PAIR.key,
  successor: { key: 'ak_successor', secretHash: '$2b$04$new' },
  at: AT,
  overlapSec,
});

describe('rolledEnd', () => {
  it('ends the pair the overlap after the roll', () => {
    expect(rolledEnd(undefined, AT_MS, 3600)).toBe(iso(AT_MS + 3_600_000));
    expect(rolledEnd('2031-01-01T00:00:00.000Z', AT_MS, 60)).toBe(iso(AT_MS + 60_000));
  });

  it('never moves the end past the pair’s own expiry, kept as stored', () => {
    const soon = '2030-01-01T12:10:00Z';
    expect(rolledEnd(soon, AT_MS, MAX_ROLL_OVERLAP_SEC)).toBe(soon);
    expect(rolledEnd(iso(AT_MS + 60_000), AT_MS, 60)).toBe(iso(AT_MS + 60_000));
  });

  it('keeps an expiry that does not parse: it counts as past already', () => {
    expect(rolledEnd('soon', AT_MS, 60)).toBe('soon');
  });
});

describe('rollOf', () => {
  it('gives the successor the pair’s subject, label, scopes and expiry, and nothing of its use', () => {
    expect(rollOf(PAIR, roll(60)).successor).toEqual({
      key: 'ak_successor',
      subject: 'alice',
      secretHash: '$2b$04$new',
      label: 'ci runner',
      status: 'active',
      createdAt: AT,
      expiresAt: '2031-01-01T00:00:00.000Z',
      scopes: ['accounts:read', 'keys'],
    });
    const forever: KeyRecord = { ...PAIR, expiresAt: undefined };
    expect(rollOf(forever, roll(60)).successor).not.toHaveProperty('expiresAt');
  });

  it('brings the rolled pair’s expiry forward to the end of the overlap, keeping its record', () => {
    expect(rollOf(PAIR, roll(60)).rolled).toEqual({ ...PAIR, expiresAt: iso(AT_MS + 60_000) });
  });

  it('revokes the rolled pair at the roll, its record gone, with no overlap', () => {
    const unrecorded = ({ verifiedRecord: _, ...rest }: KeyRecord) => rest;
    expect(endedByRoll(PAIR, roll(0))).toEqual({
      ...unrecorded(PAIR),
      status: 'revoked',
      revokedAt: AT,
    });
    // The successor keeps the expiry the pair had before the roll.
    expect(rollOf(PAIR, roll(0)).successor.expiresAt).toBe(PAIR.expiresAt);
  });
});

describe('outlivesCaller', () => {
  const callerEnds = '2030-06-01T00:00:00.000Z';

  it('lets any pair be rolled by a caller that never expires (or is no Basic caller)', () => {
    expect(outlivesCaller(undefined, undefined)).toBe(false);
    expect(outlivesCaller('2040-01-01T00:00:00.000Z', undefined)).toBe(false);
  });

  it('refuses a pair that ends after the caller’s own pair, or never', () => {
    expect(outlivesCaller('2030-06-01T00:00:01.000Z', callerEnds)).toBe(true);
    expect(outlivesCaller(undefined, callerEnds)).toBe(true);
  });

  it('allows a pair that ends with the caller’s own pair or before it: itself, most often', () => {
    expect(outlivesCaller(callerEnds, callerEnds)).toBe(false);
    expect(outlivesCaller('2030-05-01T00:00:00.000Z', callerEnds)).toBe(false);
  });

  it('counts a caller expiry that does not parse as past', () => {
    expect(outlivesCaller('2030-05-01T00:00:00.000Z', 'never')).toBe(true);
  });
});

describe('parseOverlapOption', () => {
  it('reads a duration as keys create --expires does, and 0 alone as none', () => {
    expect(['0', '0s', '90s', '30m', '1h', '24h', '1d'].map(parseOverlapOption)).toEqual([
      0, 0, 90, 1800, 3600, 86_400, 86_400,
    ]);
  });

  it('refuses more than 24 hours, and anything that is not a duration', () => {
    for (const text of [
      '25h',
      '86401s',
      '2d',
      '',
      '1',
      '-1h',
      '1.5h',
      '1 h',
      '1H',
      '2030-01-01T00:00:00Z',
    ])
      expect(parseOverlapOption(text), text).toBeUndefined();
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../../src/credentials/generate-key-pair.js';
import {
  checkVerifiedRecord,
  formatVerifiedRecord,
  newFleetKeyText,
  parseFleetKey,
  recordEnd,
  strongSecret,
  type FleetKey,
} from '../../../src/credentials/verified-record.js';

function fleetKey(): FleetKey {
  const key = parseFleetKey(newFleetKeyText());
  if (key === undefined) throw new Error('a new fleet key must parse');
  return key;
}

const FLEET = fleetKey();
const NOW = Date.parse('2026-11-27T12:00:00.000Z');
const HOUR = 3_600_000;
const { key: KEY, secret: SECRET } = generateKeyPair('alice');
const HASH = '$2b$10$ppV4JfSzIU.bUyqyPJUbCOtGWWi1qNh/odMl8ZukXBESnDQqKcDhe';
const PAIR = { key: KEY, secret: SECRET, secretHash: HASH };
const RECORD = formatVerifiedRecord(FLEET, PAIR, NOW + HOUR);

describe('verified records', () => {
  it('proves the pair it was made for until its end', () => {
    expect(RECORD).toMatch(/^v1\.[0-9a-f]{8}\.\d+\.[A-Za-z0-9_-]{22}$/);
    // Under Redis's listpack limit for a hash value (64 bytes).
    expect(RECORD.length).toBeLessThanOrEqual(64);
    expect(recordEnd(RECORD)).toBe(NOW + HOUR);
    expect(checkVerifiedRecord(FLEET, RECORD, PAIR, NOW)).toBe('hit');
    expect(checkVerifiedRecord(FLEET, RECORD, PAIR, NOW + HOUR - 1)).toBe('hit');
  });

  it('proves nothing from its end on', () => {
    expect(checkVerifiedRecord(FLEET, RECORD, PAIR, NOW + HOUR)).toBe('ended');
  });

  it('refuses another secret, another key id and another hash', () => {
    expect(
      checkVerifiedRecord(FLEET, RECORD, { ...PAIR, secret: `${SECRET.slice(1)}x` }, NOW),
    ).toBe('refused');
    expect(
      checkVerifiedRecord(FLEET, RECORD, { ...PAIR, key: generateKeyPair('alice').key }, NOW),
    ).toBe('refused');
    expect(
      checkVerifiedRecord(FLEET, RECORD, { ...PAIR, secretHash: HASH.replace('pp', 'qq') }, NOW),
    ).toBe('refused');
  });

  it('refuses a record whose end was moved', () => {
    const moved = RECORD.replace(`.${NOW + HOUR}.`, `.${NOW + 100 * HOUR}.`);

    expect(checkVerifiedRecord(FLEET, moved, PAIR, NOW)).toBe('refused');
  });

  it('refuses a record forged without the fleet key, even under its id', () => {
    const forged = `v1.${FLEET.id}.${NOW + HOUR}.${randomBytes(16).toString('base64url')}`;

    expect(checkVerifiedRecord(FLEET, forged, PAIR, NOW)).toBe('refused');
  });

  it('tells a record made under another fleet key from a forged one', () => {
    const other = formatVerifiedRecord(fleetKey(), PAIR, NOW + HOUR);

    expect(checkVerifiedRecord(FLEET, other, PAIR, NOW)).toBe('other_key');
  });

  it('reads anything else in the field as no record', () => {
    for (const text of [undefined, '', 'v2.abc', `${RECORD}x`, RECORD.replace('v1', 'V1')])
      expect(checkVerifiedRecord(FLEET, text, PAIR, NOW)).toBe('absent');
    expect(recordEnd('v1.nonsense')).toBeUndefined();
  });
});

describe('parseFleetKey', () => {
  it('reads 32 bytes or more in base64 or base64url, padded or not, with a stable id', () => {
    const bytes = randomBytes(32);
    const forms = [
      bytes.toString('base64'),
      bytes.toString('base64url'),
      `${bytes.toString('base64')}\n`,
    ];
    const ids = forms.map((text) => parseFleetKey(text)?.id);

    expect(ids[0]).toMatch(/^[0-9a-f]{8}$/);
    expect(new Set(ids).size).toBe(1);
    expect(parseFleetKey(randomBytes(48).toString('base64'))).toBeDefined();
    expect(parseFleetKey(newFleetKeyText())?.id).not.toBe(ids[0]);
  });

  it('refuses fewer than 32 bytes and text that is not base64', () => {
    expect(parseFleetKey(randomBytes(31).toString('base64'))).toBeUndefined();
    expect(parseFleetKey(`${randomBytes(32).toString('base64')}!`)).toBeUndefined();
    expect(parseFleetKey('')).toBeUndefined();
  });
});

describe('strongSecret', () => {
  it("counts the gateway's own secrets, 48 base62 characters, as strong", () => {
    expect(strongSecret(SECRET, undefined)).toBe(true);
  });

  it('counts any other form as weak unless the pair is marked with 128 bits or more', () => {
    for (const secret of [SECRET.slice(1), `${SECRET}A`, `${SECRET.slice(1)}-`, 'hunter2'])
      expect(strongSecret(secret, undefined)).toBe(false);
    expect(strongSecret('hunter2', 127)).toBe(false);
    expect(strongSecret('writer-made-secret', 128)).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import type { KeySummary } from '../../../src/credentials/credential-store.js';
import {
  decodeExpiringCount,
  encodeExpiringCount,
  endsBy,
  isExpiringSoon,
  tallyExpiring,
} from '../../../src/credentials/expiring-pairs.js';
import { keyView } from '../../../src/credentials/key-view.js';

const NOW = Date.parse('2026-11-20T00:00:00.000Z');
const DAY = 86_400_000;
const iso = (ms: number): string => new Date(ms).toISOString();

const pair = (overrides: Partial<KeySummary> = {}): KeySummary => ({
  key: 'ak_x',
  subject: 'alice',
  label: '',
  status: 'active',
  createdAt: iso(NOW - DAY),
  scopes: [],
  ...overrides,
});

async function* each(pairs: readonly KeySummary[]): AsyncGenerator<KeySummary> {
  for (const p of pairs) yield await Promise.resolve(p);
}

describe('pairs ending soon', () => {
  it('counts a pair that works now and expires by the bound, the bound included', () => {
    expect(endsBy(pair({ expiresAt: iso(NOW + DAY) }), NOW, NOW + DAY)).toBe(true);
    expect(endsBy(pair({ expiresAt: iso(NOW + DAY + 1) }), NOW, NOW + DAY)).toBe(false);
  });

  it('does not count a pair without expiry, one revoked, one already expired or one whose expiry does not parse', () => {
    const bound = NOW + 30 * DAY;
    expect(endsBy(pair(), NOW, bound)).toBe(false);
    expect(endsBy(pair({ status: 'revoked', expiresAt: iso(NOW + DAY) }), NOW, bound)).toBe(false);
    expect(endsBy(pair({ expiresAt: iso(NOW) }), NOW, bound)).toBe(false);
    expect(endsBy(pair({ expiresAt: 'soon' }), NOW, bound)).toBe(false);
  });

  it('warns of an end within 30 days, in the holder’s view of the pair too', () => {
    const soon = pair({ expiresAt: iso(NOW + 30 * DAY) });
    const later = pair({ expiresAt: iso(NOW + 30 * DAY + 1) });
    expect([isExpiringSoon(soon, NOW), isExpiringSoon(later, NOW)]).toEqual([true, false]);
    expect(keyView(soon, NOW).expiring_soon).toBe(true);
    expect(keyView(later, NOW).expiring_soon).toBe(false);
    expect(keyView(pair({ status: 'revoked', expiresAt: iso(NOW + DAY) }), NOW).expiring_soon).toBe(
      false,
    );
  });

  it('tallies the pairs into the windows, a pair of the week counted in the month too', async () => {
    const pairs = [1, 6.9, 7, 8, 29, 30, 31].map((days) =>
      pair({ key: `ak_${String(days)}`, expiresAt: iso(NOW + days * DAY) }),
    );
    await expect(tallyExpiring(each(pairs), NOW)).resolves.toEqual({
      countedAtMs: NOW,
      within: { '7d': 3, '30d': 6 },
    });
  });

  it('shares a count as JSON and reads back only one of that shape', () => {
    const count = { countedAtMs: NOW, within: { '7d': 2, '30d': 5 } };
    const text = encodeExpiringCount(count);
    expect(JSON.parse(text)).toEqual({ counted_at_ms: NOW, within_7d: 2, within_30d: 5 });
    expect(decodeExpiringCount(text)).toEqual(count);
    for (const other of [
      null,
      undefined,
      '',
      'not json',
      '[]',
      '{"counted_at_ms":1,"within_7d":2}',
      '{"counted_at_ms":1,"within_7d":-1,"within_30d":2}',
      '{"counted_at_ms":1,"within_7d":1.5,"within_30d":2}',
    ])
      expect(decodeExpiringCount(other), String(other)).toBeUndefined();
  });
});

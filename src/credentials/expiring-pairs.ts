import { isUsable, type KeySummary } from './credential-store.js';
import { parseJsonObject } from './json-object.js';

const DAY_MS = 86_400_000;

/**
 * The windows pairs ending soon are counted in (gateway_pairs_expiring{within}): a week, the
 * time to act on an alert; a month, the time to plan a rotation. Cumulative: a pair ending in
 * 3 days counts in both.
 */
export const EXPIRING_WINDOWS = [
  { within: '7d', ms: 7 * DAY_MS },
  { within: '30d', ms: 30 * DAY_MS },
] as const;

export type ExpiringWindow = (typeof EXPIRING_WINDOWS)[number]['within'];

/** The widest window: a pair ending within it is `expiring_soon` to its holder. */
export const EXPIRY_WARNING_MS = 30 * DAY_MS;

/** How many usable pairs, of every subject, end within each window, as counted at `countedAtMs`. */
export interface ExpiringCount {
  readonly countedAtMs: number;
  readonly within: Readonly<Record<ExpiringWindow, number>>;
}

/**
 * True when the pair works at `nowMs` and its expiry comes by `untilMs`: it is going to stop
 * working on its own. A revoked pair has already ended, and a pair without expiry never does.
 */
export function endsBy(record: KeySummary, nowMs: number, untilMs: number): boolean {
  if (record.expiresAt === undefined || !isUsable(record, nowMs)) return false;
  return Date.parse(record.expiresAt) <= untilMs;
}

/** What the holder is warned of (GET /keys `expiring_soon`, the portal): an end within 30 days. */
export function isExpiringSoon(record: KeySummary, nowMs: number): boolean {
  return endsBy(record, nowMs, nowMs + EXPIRY_WARNING_MS);
}

/** Tallies `pairs` (those a store's expiringPairs yields) into the windows, as of `nowMs`. */
export async function tallyExpiring(
  pairs: AsyncIterable<KeySummary>,
  nowMs: number,
): Promise<ExpiringCount> {
  const within: Record<ExpiringWindow, number> = { '7d': 0, '30d': 0 };
  for await (const pair of pairs)
    for (const window of EXPIRING_WINDOWS)
      if (endsBy(pair, nowMs, nowMs + window.ms)) within[window.within] += 1;
  return { countedAtMs: nowMs, within };
}

/**
 * A count as the Redis store shares it between gateways (JSON), and back; undefined for any
 * other value (written by another version: counted again).
 */
export function encodeExpiringCount(count: ExpiringCount): string {
  return JSON.stringify({ counted_at_ms: count.countedAtMs, ...withinFields(count.within) });
}

const withinFields = (within: ExpiringCount['within']): Record<string, number> =>
  Object.fromEntries(EXPIRING_WINDOWS.map((w) => [`within_${w.within}`, within[w.within]]));

export function decodeExpiringCount(text: string | null | undefined): ExpiringCount | undefined {
  if (text === null || text === undefined) return undefined;
  const fields = parseJsonObject(text);
  if (fields === undefined) return undefined;
  const count = (name: string): number | undefined => {
    const n = fields[name];
    return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
  };
  const countedAtMs = count('counted_at_ms');
  const week = count('within_7d');
  const month = count('within_30d');
  if (countedAtMs === undefined || week === undefined || month === undefined) return undefined;
  return { countedAtMs, within: { '7d': week, '30d': month } };
}

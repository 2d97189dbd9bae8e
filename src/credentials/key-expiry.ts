import { OUTLIVE_MESSAGE } from '../errors/gateway-error.js';

/**
 * When a new pair expires, as asked by `POST /keys` (`expires_in` or `expires_at`) or by
 * `keys create --expires`. Pure: the caller passes the clock.
 *
 * A lifetime is at most ten years: far beyond any rotation policy, and it keeps every
 * expiry a four-digit year, so the stored ISO strings stay fixed-width and compare as text
 * in the Redis scripts (a year past 9999 would be written `+010000-…`).
 */
export const MAX_KEY_LIFETIME_SEC = 10 * 365 * 86_400;

/** A refused expiry of a new pair (`POST /keys` 400 bad_request; `keys create --expires`). */
export const EXPIRY_MESSAGES = {
  both: 'Give expires_in or expires_at, not both.',
  expiresIn: `expires_in must be a whole number of seconds from 1 to ${MAX_KEY_LIFETIME_SEC} (ten years).`,
  expiresAt:
    'expires_at must be an RFC 3339 date-time with an offset (e.g. 2030-01-31T12:00:00Z), in the future and at most ten years ahead.',
  option:
    '--expires must be a duration (90d, 12h, 30m, 3600s) or an RFC 3339 date-time with an offset, in the future and at most ten years ahead.',
} as const;

export type ExpiryOutcome =
  | { readonly ok: true; readonly expiresAt: string | undefined }
  | { readonly ok: false; readonly message: string };

/** RFC 3339 §5.6 `date-time` as parsed here: `T` (or `t`) between date and time, an offset. */
export const RFC3339_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Milliseconds since the epoch of an RFC 3339 `date-time` (§5.6: an offset is required),
 * or undefined when the text is not one, including impossible dates (February 30th).
 * A leap second (`:60`) is refused: JavaScript time has none.
 */
export function parseRfc3339(text: string): number | undefined {
  const match = RFC3339_DATE_TIME.exec(text);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fraction = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offsetHours = Number(match[10] ?? 0);
  const offsetMinutes = Number(match[11] ?? 0);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    return undefined;
  }
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, fraction);
  const offsetMs = (offsetHours * 60 + offsetMinutes) * 60_000 * (match[9] === '-' ? -1 : 1);
  // Date.UTC maps years 0-99 to 1900-1999; such a date is in the past either way.
  return utc - offsetMs;
}

function within(endsAtMs: number, nowMs: number): boolean {
  return endsAtMs > nowMs && endsAtMs <= nowMs + MAX_KEY_LIFETIME_SEC * 1000;
}

/** The `expires_in` / `expires_at` members of a `POST /keys` body (absent: undefined). */
export function parseExpiryRequest(
  expiresIn: unknown,
  expiresAt: unknown,
  nowMs: number,
): ExpiryOutcome {
  if (expiresIn !== undefined && expiresAt !== undefined)
    return { ok: false, message: EXPIRY_MESSAGES.both };
  if (expiresIn !== undefined) {
    if (
      typeof expiresIn !== 'number' ||
      !Number.isInteger(expiresIn) ||
      expiresIn < 1 ||
      expiresIn > MAX_KEY_LIFETIME_SEC
    ) {
      return { ok: false, message: EXPIRY_MESSAGES.expiresIn };
    }
    return { ok: true, expiresAt: new Date(nowMs + expiresIn * 1000).toISOString() };
  }
  if (expiresAt !== undefined) {
    const endsAt = typeof expiresAt === 'string' ? parseRfc3339(expiresAt) : undefined;
    if (endsAt === undefined || !within(endsAt, nowMs))
      return { ok: false, message: EXPIRY_MESSAGES.expiresAt };
    return { ok: true, expiresAt: new Date(endsAt).toISOString() };
  }
  return { ok: true, expiresAt: undefined };
}

const DURATION = /^(\d{1,10})([smhd])$/;
const UNIT_SEC = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/**
 * Seconds of a duration as the CLI takes it (`90d`, `12h`, `30m`, `3600s`: digits and one
 * unit); undefined for any other text. `keys create --expires` and `keys roll --overlap`.
 */
export function parseDurationSec(text: string): number | undefined {
  const duration = DURATION.exec(text);
  if (duration === null) return undefined;
  return Number(duration[1]) * UNIT_SEC[duration[2] as keyof typeof UNIT_SEC];
}

/** `keys create --expires`: a duration (`90d`, `12h`, `30m`, `3600s`) or an RFC 3339 time. */
export function parseExpiresOption(text: string, nowMs: number): ExpiryOutcome {
  const seconds = parseDurationSec(text);
  if (seconds !== undefined) {
    if (seconds < 1 || seconds > MAX_KEY_LIFETIME_SEC)
      return { ok: false, message: EXPIRY_MESSAGES.option };
    return { ok: true, expiresAt: new Date(nowMs + seconds * 1000).toISOString() };
  }
  const endsAt = parseRfc3339(text);
  if (endsAt === undefined || !within(endsAt, nowMs))
    return { ok: false, message: EXPIRY_MESSAGES.option };
  return { ok: true, expiresAt: new Date(endsAt).toISOString() };
}

/**
 * The expiry of a pair made by a Basic caller whose own pair has `callerExpiresAt`: a pair
 * never outlives the pair that made it, or a leaked expiring pair could mint a permanent
 * one. Asked for nothing, the new pair inherits the caller's expiry; asked for a later
 * one, it is refused (not clamped: the client gets what it asked for or is told why).
 * An expiry that does not parse counts as past, as in isExpired.
 */
export function boundByCaller(
  requested: string | undefined,
  callerExpiresAt: string | undefined,
): ExpiryOutcome {
  if (callerExpiresAt === undefined) return { ok: true, expiresAt: requested };
  const callerEnds = Date.parse(callerExpiresAt);
  if (Number.isNaN(callerEnds)) return { ok: false, message: OUTLIVE_MESSAGE };
  // Inherited in the one form the stores compare as text (another writer may have stored
  // the caller's with an offset, or without milliseconds).
  if (requested === undefined) return { ok: true, expiresAt: new Date(callerEnds).toISOString() };
  if (Date.parse(requested) > callerEnds) return { ok: false, message: OUTLIVE_MESSAGE };
  return { ok: true, expiresAt: requested };
}

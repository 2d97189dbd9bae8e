import type { Format } from '../identity/identity-formats.js';
import { isExpired, type KeySummary } from './credential-store.js';
import { isExpiringSoon } from './expiring-pairs.js';

/** Code points (as JSON Schema's maxLength counts), not UTF-16 units. */
export const MAX_LABEL_CHARS = 200;

/**
 * One character of a label: any code point but the C0 and C1 controls, DEL, the bidi
 * embeddings and overrides (U+202A-U+202E) and isolates (U+2066-U+2069), which would reorder
 * or hide the text of `keys list` on a terminal (the "Trojan Source" trick, CVE-2021-42574),
 * and lone surrogates, which no UTF-8 can carry (RFC 3629 §3) and would come back as U+FFFD.
 * The second branch is a surrogate pair as two code units, so the pattern means the same
 * with and without the `u` flag: JavaScript here, a JSON Schema validator in the document.
 */
const LABEL_CHAR =
  '(?:[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])';

/** A pair's label: shown in listings and one line per pair in the CLI's text. */
export const LABEL: Format = {
  pattern: new RegExp(`^${LABEL_CHAR}{0,${MAX_LABEL_CHARS}}$`),
  rule: `at most ${MAX_LABEL_CHARS} characters, without control or bidi characters`,
};

/**
 * What a pair's holder sees of its state at `nowMs`: `revoked` wins (an act, for good), then
 * `expired` once its time has come, else `active`. Stores keep only active/revoked: expiry
 * needs no write at the instant it happens.
 */
export type KeyViewStatus = 'active' | 'revoked' | 'expired';

export function viewStatus(record: KeySummary, nowMs: number): KeyViewStatus {
  if (record.status === 'revoked') return 'revoked';
  return isExpired(record, nowMs) ? 'expired' : 'active';
}

/** A pair as its holder sees it (openapi/api-schemas' keyViewSchema; a test keeps them equal). */
export interface KeyView {
  id: string;
  key: string;
  label: string;
  status: KeyViewStatus;
  created_at: string;
  revoked_at?: string;
  expires_at: string | null;
  scopes: readonly string[];
  last_used_at: string | null;
  /** Active and expiring within 30 days (EXPIRY_WARNING_MS): roll it before it stops working. */
  expiring_soon: boolean;
}

/** What a client may see of a pair at `nowMs`: never the secret, never its hash. */
export function keyView(record: KeySummary, nowMs: number): KeyView {
  return {
    id: record.key,
    key: record.key,
    label: record.label,
    status: viewStatus(record, nowMs),
    created_at: record.createdAt,
    ...(record.revokedAt === undefined ? {} : { revoked_at: record.revokedAt }),
    expires_at: record.expiresAt ?? null,
    scopes: record.scopes,
    last_used_at: record.lastUsedAt ?? null,
    expiring_soon: isExpiringSoon(record, nowMs),
  };
}

import { hasControlCharacter } from '../identity/identity-formats.js';
import { isExpired, type KeySummary } from './credential-store.js';

export const MAX_LABEL_CHARS = 200;

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

/** A pair as its holder sees it (openapi/api-schemas' keyViewSchema; tsc keeps them equal). */
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
  };
}

/** A label is shown in listings (and the CLI's one-line-per-pair view): no control characters. */
export function isValidLabel(label: string): boolean {
  return label.length <= MAX_LABEL_CHARS && !hasControlCharacter(label);
}

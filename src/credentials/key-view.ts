import { hasControlCharacter } from '../identity/identity-formats.js';
import type { KeyRecord } from './credential-store.js';

const MAX_LABEL_CHARS = 200;

/** What a client may see of a pair: never the secret, never its hash. */
export function keyView(record: KeyRecord): Record<string, unknown> {
  return {
    id: record.key,
    key: record.key,
    label: record.label,
    status: record.status,
    created_at: record.createdAt,
    ...(record.revokedAt === undefined ? {} : { revoked_at: record.revokedAt }),
  };
}

/** A label is shown in listings (and the CLI's one-line-per-pair view): no control characters. */
export function isValidLabel(label: string): boolean {
  return label.length <= MAX_LABEL_CHARS && !hasControlCharacter(label);
}

import type {
  KeyRecord,
  RetentionOptions,
  UserRecord,
} from '../../credentials/credential-store.js';
import { DEFAULT_AUDIT_SETTINGS, type AuditSettings } from '../../credentials/audit-log.js';
import type { Backend } from '../backend.js';
import { createLocalBucketStore } from '../../protection/local-buckets.js';
import { createMemoryStore } from './credential-store.js';
import { createMemoryAuditLog } from './memory-audit.js';
import { createMemoryLockout } from './lockout-store.js';

export interface MemoryBackendOptions {
  readonly seed?: { keys?: readonly KeyRecord[]; users?: readonly UserRecord[] };
  /** Milliseconds since the epoch: what decides expiry, ends and locks. */
  readonly now?: () => number;
  readonly retention?: RetentionOptions;
  /** How many key events are kept, and how long (audit.*). */
  readonly audit?: AuditSettings;
}

/**
 * Everything in this process (the zero-setup default): nothing persisted, nothing shared
 * with another instance or worker.
 */
export function createMemoryBackend(options: MemoryBackendOptions = {}): Backend {
  const now = options.now ?? Date.now;
  return {
    credentials: createMemoryStore(options.seed, now, options.retention),
    lockout: (config) => createMemoryLockout(config, now),
    buckets: ({ maxTrackedBuckets }) => createLocalBucketStore({ maxBuckets: maxTrackedBuckets }),
    audit: createMemoryAuditLog(options.audit ?? DEFAULT_AUDIT_SETTINGS, now),
  };
}

import { createMemoryAuditLog } from '../../src/backends/memory/memory-audit.js';
import {
  createAuditTrail,
  DEFAULT_AUDIT_SETTINGS,
  type AuditTrail,
} from '../../src/credentials/audit-log.js';

/**
 * An audit trail on a log in this process, for endpoints built alone in a test; a failed
 * append is the test's failure (the memory log never fails).
 */
export function memoryAuditTrail(now: () => number = Date.now): AuditTrail {
  return createAuditTrail(createMemoryAuditLog(DEFAULT_AUDIT_SETTINGS, now), {
    host: 'test-host',
    now,
    failed: (_event, error) => {
      throw error;
    },
  });
}

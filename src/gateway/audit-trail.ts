import { hostname } from 'node:os';
import type { Backend } from '../backends/backend.js';
import { auditRecord, createAuditTrail, type AuditTrail } from '../credentials/audit-log.js';
import { describeFailure } from '../errors/describe-failure.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/**
 * The audit trail of this gateway's key endpoints and portal, on its backend's log. An event
 * that cannot be appended does not undo or fail its change (made already, and answered): it is
 * counted (`gateway_audit_write_failures_total`) and logged whole, at error, every time, never
 * throttled, so the log holds what the stream lost.
 */
export function gatewayAuditTrail(
  backend: Backend,
  logger: Logger,
  metrics: GatewayMetrics,
  now: () => number,
): AuditTrail {
  return createAuditTrail(backend.audit, {
    host: hostname(),
    now,
    failed: (event, error) => {
      metrics.countAuditWriteFailure();
      logger.error(
        { audit_event: auditRecord(event), cause: describeFailure(error) },
        'audit event not written',
      );
    },
  });
}

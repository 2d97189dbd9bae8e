import type { RecordEvents } from '../auth/verified-records.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { throttledWarnings } from '../observability/throttled-warnings.js';

/**
 * Counted, and logged when something is wrong: the store lost the fleet key or cannot give it
 * (records skipped, bcrypt decides), a write failed, or records under another fleet key (the
 * gateways on this store do not share one: each overwrites the other's, and pays bcrypt).
 */
export function recordEvents(logger: Logger, metrics: GatewayMetrics): RecordEvents {
  // Each kind once a minute at most: a split fleet would say it at every cache miss.
  const warn = throttledWarnings((_kind, reason, suppressed) =>
    logger.warn({ suppressed }, reason),
  );
  const otherKey = warn('other_key');
  const notWritten = warn('write');
  const noFleetKey = warn('fleet_key');
  const why = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  return {
    checked(result) {
      metrics.countVerifiedRecordCheck(result);
      if (result === 'other_key')
        otherKey(
          'verified record made under another fleet key: the gateways on this store do not share one',
        );
    },
    wrote(result, err) {
      metrics.countVerifiedRecordWrite(result);
      if (result === 'failed')
        notWritten(`verified record not written (${why(err)}); written on the next success`);
    },
    fleetKeyUnavailable(err) {
      noFleetKey(`fleet key unavailable (${why(err)}): verified records skipped, bcrypt decides`);
    },
  };
}

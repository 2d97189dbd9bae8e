import type { Backend } from '../backends/backend.js';
import type { AuditTrail } from '../credentials/audit-log.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { SpanSink } from '../tracing/span-sink.js';

/**
 * What every request chain of a process is built with: made once at start (gateway.ts) and
 * handed again to each reload's build. What changes with the configuration is not here.
 */
export interface ChainDeps {
  /** Where credentials, lockout counters and buckets live (picked once, build-backend.ts). */
  readonly backend: Backend;
  /** Where the keys endpoints and the portal record the changes they make (the backend's log). */
  readonly audit: AuditTrail;
  readonly hasher: SecretHasher;
  /** A hash of a random secret, compared when a key or user does not exist. */
  readonly dummyHash: string;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  /** The process's span export; undefined when spans are not exported. */
  readonly spans: SpanSink | undefined;
  /** Logs an issuer's failed JWKS fetch (its pace outlives a reload). */
  readonly jwksFetchFailed: ((issuer: string) => (reason: string) => void) | undefined;
}

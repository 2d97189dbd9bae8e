import { lowerThreadPoolPriority } from '../concurrency/thread-pool-priority.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { randomBase62 } from '../credentials/generate-key-pair.js';
import { createSecretHasher } from '../credentials/secret-hasher.js';
import { createMetrics } from '../observability/metrics.js';
import { throttledWarnings } from '../observability/throttled-warnings.js';
import type { SpanExport } from '../tracing/span-sink.js';
import { gatewayAuditTrail } from './audit-trail.js';
import { makeBootstrapPair, type BootstrapPair } from './bootstrap-pair.js';
import { createBackend } from './build-backend.js';
import { buildSpanExport } from './build-span-export.js';
import type { ChainDeps } from './chain-deps.js';
import { followReadiness, type Readiness } from './follow-readiness.js';
import type { GatewayDeps } from './gateway.js';

export interface ProcessParts {
  readonly chainDeps: ChainDeps;
  readonly bootstrap: BootstrapPair | undefined;
  readonly readiness: Readiness;
  readonly spanExport: SpanExport | undefined;
}

/**
 * What the process keeps from start to exit, whatever reloads come: its metrics, its store
 * (connected or not), the hasher and the dummy hash, the span export; and the demo pair.
 */
export async function buildChainDeps(
  initial: GatewayConfig,
  deps: GatewayDeps,
  now: () => number,
): Promise<ProcessParts> {
  const { logger } = deps;
  // A worker's reloads are counted by its primary, which decides them.
  const metrics = createMetrics({
    countReloads: deps.worker !== true,
    now,
    // HTTPS on or off needs a restart: the TLS families exist from the start or never.
    tls: initial.server.tls !== undefined,
  });
  const backend = deps.backend ?? createBackend(initial, now, logger, metrics);
  const store = backend.credentials;
  // Connected or not, the start goes on; waiting for the first outcome (a few seconds at
  // most) only puts its log line first and makes the first scrape tell the truth.
  await store.health.settled;
  const hasher = createSecretHasher(initial.credentials.bcryptCost);
  const bootstrap = await makeBootstrapPair(initial, store, hasher, now);
  const dummyHash = await hasher.hash(randomBase62(48));
  // After a first bcrypt run: the pool's threads exist from then on.
  if (initial.server.threadPoolNice > 0) lowerThreadPoolPriority(initial.server.threadPoolNice);
  const readiness = followReadiness(store, metrics);
  const spanExport = await buildSpanExport(initial, logger);
  // One warning per issuer a minute at most, kept across reloads like the fetch counters.
  const jwksFetchFailed = throttledWarnings(
    (issuer, reason, suppressed) =>
      logger.warn({ issuer, reason, suppressed }, 'JWKS fetch failed'),
    now,
  );
  const spans = spanExport?.sink;
  const audit = gatewayAuditTrail(backend, logger, metrics, now);
  const chainDeps = {
    backend,
    audit,
    hasher,
    dummyHash,
    metrics,
    logger,
    now,
    spans,
    jwksFetchFailed,
  };
  return { chainDeps, bootstrap, readiness, spanExport };
}

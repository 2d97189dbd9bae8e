import type { Backend } from '../backends/backend.js';
import { createMemoryBackend } from '../backends/memory/memory-backend.js';
import { createRedisBackend } from '../backends/redis/redis-backend.js';
import type { GatewayConfig } from '../config/config-schema.js';
import type { AuditSettings } from '../credentials/audit-log.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/**
 * The backend the configuration names, the one choice of it: Redis, or the in-process one
 * seeded from YAML. The gateway makes its own here; the CLI's one-off commands open their
 * store through it too. With a logger, Redis's connection states and breakers are logged, and
 * with metrics its breakers and call times shown (the gateway's; one-off commands say what
 * failed themselves).
 */
export function createBackend(
  config: GatewayConfig,
  now: () => number = Date.now,
  log?: Logger,
  metrics?: GatewayMetrics,
): Backend {
  const retention = { retainEndedSec: config.keys.retainEndedDays * 86_400 };
  const audit = auditSettings(config);
  if (config.credentials.store === 'redis')
    return createRedisBackend(config.credentials.redis, {
      now,
      log,
      retention,
      audit,
      ...(metrics === undefined
        ? {}
        : {
            onBreakerChange: (target, open) => metrics.setRedisBreaker(target, open),
            onCallTime: (seconds) => metrics.observeRedisCall(seconds),
          }),
    });
  const { seed } = config.credentials;
  const epoch = new Date(0).toISOString();
  return createMemoryBackend({
    seed: {
      keys: seed.keys.map((k) => ({ ...k, status: 'active', createdAt: epoch })),
      users: seed.users.map((u) => ({ ...u, createdAt: epoch })),
    },
    now,
    retention,
    audit,
  });
}

/** What the backend's audit log keeps (audit.*). */
export function auditSettings(config: GatewayConfig): AuditSettings {
  const { maxEvents, maxEventsPerSubject, retainDays } = config.audit;
  return { maxEvents, maxEventsPerSubject, retainSec: retainDays * 86_400 };
}

import type { GatewayConfig } from '../config/config-schema.js';
import { createExpiringCounter, type ExpiringCounter } from '../credentials/expiring-counter.js';
import { describeFailure } from '../errors/describe-failure.js';
import type { ChainDeps } from './chain-deps.js';

/**
 * gateway_pairs_expiring, counted in the background every keys.expiringCountIntervalSec
 * (0: never), a first time at start; undefined when not counted. Each process (each worker)
 * runs one: on Redis they share one count per interval (CredentialStore.countExpiring).
 */
export function buildExpiringCounter(
  config: GatewayConfig,
  deps: Pick<ChainDeps, 'backend' | 'metrics' | 'logger' | 'now'>,
): ExpiringCounter | undefined {
  const intervalSec = config.keys.expiringCountIntervalSec;
  if (intervalSec === 0) return undefined;
  const store = deps.backend.credentials;
  const counter = createExpiringCounter({
    count: (maxAgeMs) => store.countExpiring(maxAgeMs),
    show: (within) => deps.metrics.setPairsExpiring(within),
    intervalMs: intervalSec * 1000,
    now: deps.now,
    onError: (error) =>
      deps.logger.warn(
        { cause: describeFailure(error), retry_in_sec: intervalSec },
        'pairs ending soon not counted',
      ),
  });
  void counter.countNow();
  return counter;
}

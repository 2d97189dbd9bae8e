import { describeFailure } from '../errors/describe-failure.js';
import { MAX_KEY_CHARS } from '../identity/key-id.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { LockoutEvents } from '../protection/guard-attempt.js';
import type { LockoutTarget } from '../protection/lockout.js';

/**
 * The lines fail2ban-style tools match: one `authentication failed` per refused check and
 * one `locked out` per lock started, each with the client address, the network its counters
 * count, and the key or username as sent (at most MAX_KEY_CHARS), never a secret or password.
 */
export function lockoutEvents(logger: Logger, metrics: GatewayMetrics): LockoutEvents {
  const who = (target: LockoutTarget) => ({
    client_network: target.network,
    ...(target.kind === 'basic'
      ? { key: target.id.slice(0, MAX_KEY_CHARS) }
      : { username: target.id }),
  });
  return {
    failed(target, reason) {
      metrics.countAuthFailure(target.kind, reason);
      logger.warn(
        { scheme: target.kind, client_address: target.address, ...who(target), reason },
        'authentication failed',
      );
    },
    locked(target, lock) {
      metrics.countLockout(lock.scope);
      logger.warn(
        {
          scheme: target.kind,
          client_address: target.address,
          ...who(target),
          scope: lock.scope,
          lock_sec: lock.lockSec,
          failures: lock.failures,
        },
        'locked out',
      );
    },
    refused(_target, refusal) {
      metrics.countLockoutRefusal(refusal.scope);
    },
    settleFailed(target, error) {
      logger.warn(
        {
          scheme: target.kind,
          client_address: target.address,
          ...who(target),
          cause: describeFailure(error),
        },
        'lockout not updated',
      );
    },
  };
}

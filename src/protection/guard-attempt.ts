import { GatewayError } from '../errors/gateway-error.js';
import type {
  AttemptOutcome,
  LockStarted,
  Lockout,
  LockoutRefusal,
  LockoutTarget,
} from './lockout.js';

/**
 * Why credentials were refused, for the failure log line and metric: `invalid_credentials`
 * when they were compared (and counted), `unusable_credentials` when refused before any
 * compare (an empty key or secret, a secret over bcrypt's 72 bytes, a key over 128, a
 * self-describing key id whose checksum fails).
 */
export type FailureReason = 'invalid_credentials' | 'unusable_credentials';

/** What the lockout reports; the composition root turns it into log lines and metrics. */
export interface LockoutEvents {
  failed(target: LockoutTarget, reason: FailureReason): void;
  locked(target: LockoutTarget, lock: LockStarted): void;
  refused(target: LockoutTarget, refusal: LockoutRefusal): void;
  /** Settling failed (the store stopped answering): the reservation expires by itself. */
  settleFailed(target: LockoutTarget, error: unknown): void;
}

export const SILENT_LOCKOUT_EVENTS: LockoutEvents = {
  failed: () => undefined,
  locked: () => undefined,
  refused: () => undefined,
  settleFailed: () => undefined,
};

/**
 * Runs one credential check (`task`: the store read and the bcrypt compare) under the
 * lockout: refused with 429 `rate_limited` and Retry-After before the task starts, whether
 * the secret is right or not; else counted as `judge` says, or given back when the task
 * throws (no verdict). The settle is awaited, so the next attempt of a client that waited for
 * this answer sees it counted.
 */
export async function guardAttempt<T>(
  lockout: Lockout,
  events: LockoutEvents,
  target: LockoutTarget,
  task: () => Promise<T>,
  judge: (result: T) => 'success' | FailureReason,
): Promise<T> {
  const decision = await lockout.begin(target);
  if (decision.kind === 'refuse') {
    events.refused(target, decision);
    throw new GatewayError('rate_limited', { retryAfterSec: decision.retryAfterSec });
  }
  const settle = async (outcome: AttemptOutcome): Promise<void> => {
    try {
      for (const lock of await decision.attempt.settle(outcome)) events.locked(target, lock);
    } catch (error) {
      events.settleFailed(target, error);
    }
  };
  let result: T;
  try {
    result = await task();
  } catch (error) {
    await settle('error');
    throw error;
  }
  const verdict = judge(result);
  if (verdict !== 'success') events.failed(target, verdict);
  await settle(verdict === 'success' ? 'success' : 'failure');
  return result;
}

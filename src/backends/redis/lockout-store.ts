import type { LockoutConfig } from '../../config/config-schema.js';
import { RESERVATION_MS, type LockoutLimit } from '../../protection/lockout-policy.js';
import {
  countersOf,
  counterLimits,
  LOCKOUT_SCOPES,
  toRetryAfterSec,
  type LockStarted,
  type Lockout,
  type LockoutTarget,
} from '../../protection/lockout.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { LOCKOUT } from './scripts.js';

/**
 * The lockout shared by every gateway on one Redis: the policy of lockout-policy.ts in
 * scripts/lockout.lua, each step one atomic run on Redis's clock.
 */
export function createRedisLockout(
  config: LockoutConfig,
  runner: ScriptRunner,
  layout: RedisLayout,
): Lockout {
  const windowMs = config.windowSec * 1000;
  const run = (counters: readonly string[], op: string, limits: readonly LockoutLimit[]) =>
    runner.run(
      LOCKOUT,
      { counters },
      {
        op,
        windowMs,
        reservationMs: RESERVATION_MS,
        limits: limits.flatMap((l) => [l.threshold, l.initialLockMs, l.maxLockMs]),
      },
    );
  const refusal = (kind: LockoutTarget['kind'], reply: unknown) => {
    const [refused, index, wait, locked] = reply as [number, number?, number?, number?];
    if (refused !== 1) return undefined;
    const scopes = LOCKOUT_SCOPES[kind];
    return {
      kind: 'refuse' as const,
      scope: scopes[(index ?? 1) - 1] ?? scopes[0],
      retryAfterSec: toRetryAfterSec(wait ?? 0),
      locked: locked === 1,
    };
  };

  return {
    async begin(target) {
      const counters = countersOf(target).map(layout.lockoutCounter);
      const limits = counterLimits(config, target.kind);
      const refused = refusal(target.kind, await run(counters, 'begin', limits));
      if (refused !== undefined) return refused;
      let settled = false;
      return {
        kind: 'allow',
        attempt: {
          async settle(outcome) {
            if (settled) return [];
            settled = true;
            const reply = (await run(counters, outcome, limits)) as number[];
            const locks: LockStarted[] = [];
            for (let i = 0; i + 2 < reply.length; i += 3) {
              const scopes = LOCKOUT_SCOPES[target.kind];
              locks.push({
                scope: scopes[(reply[i] ?? 1) - 1] ?? scopes[0],
                lockSec: (reply[i + 1] ?? 0) / 1000,
                failures: reply[i + 2] ?? 0,
              });
            }
            return locks;
          },
        },
      };
    },
    async checkAddress(kind, network) {
      const counters = [layout.lockoutCounter(countersOf({ kind, id: '', network })[0])];
      const limits = counterLimits(config, kind).slice(0, 1);
      return refusal(kind, await run(counters, 'check', limits));
    },
  };
}

import type { RedisConfig } from '../../config/config-schema.js';
import { unlockedCounters, type Unlock } from '../../protection/lockout.js';
import { scanNames, withAdminRunner } from './admin-runner.js';
import { redisLayout } from './layout.js';
import { unlockMessage } from './revocation-message.js';
import type { ScriptRunner } from './run-script.js';

/** What one unlock found: the counters it deleted, and how many of them held a lock. */
export interface UnlockResult {
  readonly unlock: Unlock;
  readonly cleared: number;
  readonly locked: number;
}

/**
 * Lifts each lockout `unlocks` names (`keys unlock`): deletes its counters (names from
 * layout.ts, the families of every network found by one SCAN per master), then announces it
 * on the revocation channel so every gateway and worker forgets the lock it remembers
 * (local-locks.ts) at once. Deleted first: a gateway that forgets and asks again finds it gone.
 */
export function unlockLockouts(
  config: RedisConfig,
  unlocks: readonly Unlock[],
): Promise<UnlockResult[]> {
  const layout = redisLayout(config.keyPrefix);
  return withAdminRunner(config, async (runner) => {
    const results: UnlockResult[] = [];
    for (const unlock of unlocks) {
      const { exact, anyNetwork } = unlockedCounters(unlock);
      const names = exact.map(layout.lockoutCounter);
      for (const counter of anyNetwork)
        names.push(...(await scanNames(runner, layout.lockoutCounter(counter))));
      let cleared = 0;
      let locked = 0;
      for (const name of new Set(names)) {
        const found = await deleteCounter(runner, name);
        if (found === 'absent') continue;
        cleared += 1;
        if (found === 'locked') locked += 1;
      }
      await runner.unkeyed((client) => client.publish(layout.channel, unlockMessage(unlock)));
      results.push({ unlock, cleared, locked });
    }
    return results;
  });
}

/** Deletes a counter's hash, saying whether it held a lock then (its `lu` past Redis's TIME). */
async function deleteCounter(
  runner: ScriptRunner,
  name: string,
): Promise<'absent' | 'unlocked' | 'locked'> {
  const replies = await runner.call(name, (client, key) =>
    client.multi().hget(key, 'lu').del(key).time().exec(),
  );
  const [lockedUntil, deleted, time] = (replies ?? []).map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  }) as [string | null, number, [string, string]];
  if (deleted !== 1) return 'absent';
  const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  return Number(lockedUntil ?? 0) > nowMs ? 'locked' : 'unlocked';
}

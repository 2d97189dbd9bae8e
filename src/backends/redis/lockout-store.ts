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
import { hashTag, type RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { LOCKOUT } from './scripts.js';

/** Counters that share a slot: their names, and their positions among the target's three. */
interface SlotGroup {
  readonly names: readonly string[];
  readonly at: readonly number[];
}

/** The counters grouped by hash tag (so by slot), in their order. */
function bySlot(names: readonly string[]): SlotGroup[] {
  const groups = new Map<string, { names: string[]; at: number[] }>();
  names.forEach((name, i) => {
    const tag = hashTag(name);
    const group = groups.get(tag) ?? { names: [], at: [] };
    group.names.push(name);
    group.at.push(i);
    groups.set(tag, group);
  });
  return [...groups.values()];
}

/** The position among a target's counters of the one a success clears: (key or username, address). */
const CLEARED_BY_SUCCESS = 1;

/**
 * The lockout shared by every gateway on one Redis: the policy of lockout-policy.ts in
 * scripts/lockout.lua, on Redis's clock. A target's counters live in two slots (the id's two,
 * the network's address counter: layout.ts), so each step is one atomic run per slot. A begin
 * runs in the id's slot, then in the network's; when the network's refuses, the id's
 * reservation is given back, so an attempt is reserved on all three counters or on none, as
 * when one script decided. Only in that moment between the two runs can another attempt on the
 * same key see a reservation that is then given back: a refusal on the safe side, and only
 * near the key's thresholds. Settling runs in both slots at once.
 */
export function createRedisLockout(
  config: LockoutConfig,
  runner: ScriptRunner,
  layout: RedisLayout,
): Lockout {
  const windowMs = config.windowSec * 1000;
  const run = (group: SlotGroup, op: string, limits: readonly LockoutLimit[]) =>
    runner.run(
      LOCKOUT,
      { counters: group.names },
      {
        op,
        windowMs,
        reservationMs: RESERVATION_MS,
        clears: group.at.indexOf(CLEARED_BY_SUCCESS) + 1,
        limits: group.at.flatMap((i) => {
          const l = limits[i];
          return l === undefined ? [] : [l.threshold, l.initialLockMs, l.maxLockMs];
        }),
      },
    );
  /** A group's refusal, by the counter's position among the target's, or undefined. */
  const refusal = (group: SlotGroup, reply: unknown) => {
    const [refused, index, wait, locked] = reply as [number, number?, number?, number?];
    if (refused !== 1) return undefined;
    return {
      at: group.at[(index ?? 1) - 1] ?? 0,
      retryAfterSec: toRetryAfterSec(wait ?? 0),
      waitMs: wait ?? 0,
      locked: locked === 1,
    };
  };
  /** Gives reservations back (no verdict): the attempt does not go ahead. Never rejects. */
  const giveBack = async (groups: readonly SlotGroup[], limits: readonly LockoutLimit[]) => {
    await Promise.allSettled(groups.map((g) => run(g, 'error', limits)));
  };
  const scopeAt = (kind: LockoutTarget['kind'], at: number) => {
    const scopes = LOCKOUT_SCOPES[kind];
    return scopes[at] ?? scopes[0];
  };

  return {
    async begin(target) {
      const groups = bySlot(countersOf(target).map(layout.lockoutCounter));
      const limits = counterLimits(config, target.kind);
      // The id's slot first: a burst on one key is refused there, touching no other counter.
      const ordered = [...groups].sort(
        (a, b) => Number(a.at.includes(0)) - Number(b.at.includes(0)),
      );
      const reserved: SlotGroup[] = [];
      try {
        for (const [i, group] of ordered.entries()) {
          const refused = refusal(group, await run(group, 'begin', limits));
          if (refused !== undefined) {
            await giveBack(reserved, limits);
            // The longest refusal of all, as one script over the three counters answered: the
            // slots not asked yet are asked, reserving nothing.
            const later = await Promise.all(
              ordered.slice(i + 1).map(async (g) => refusal(g, await run(g, 'check', limits))),
            );
            const [longest = refused] = [refused, ...later]
              .flatMap((r) => (r === undefined ? [] : [r]))
              .sort((a, b) => b.waitMs - a.waitMs || a.at - b.at);
            return {
              kind: 'refuse',
              scope: scopeAt(target.kind, longest.at),
              retryAfterSec: longest.retryAfterSec,
              locked: longest.locked,
            };
          }
          reserved.push(group);
        }
      } catch (error) {
        await giveBack(reserved, limits);
        throw error;
      }
      let settled = false;
      return {
        kind: 'allow',
        attempt: {
          async settle(outcome) {
            if (settled) return [];
            settled = true;
            const replies = await Promise.all(groups.map((g) => run(g, outcome, limits)));
            const locks: LockStarted[] = [];
            replies.forEach((reply, g) => {
              const numbers = reply as number[];
              for (let i = 0; i + 2 < numbers.length; i += 3)
                locks.push({
                  scope: scopeAt(target.kind, groups[g]?.at[(numbers[i] ?? 1) - 1] ?? 0),
                  lockSec: (numbers[i + 1] ?? 0) / 1000,
                  failures: numbers[i + 2] ?? 0,
                });
            });
            // In the order of the target's counters, as one script over all three gave them.
            const order = LOCKOUT_SCOPES[target.kind] as readonly string[];
            return locks.sort((a, b) => order.indexOf(a.scope) - order.indexOf(b.scope));
          },
        },
      };
    },
    async checkAddress(kind, network) {
      const [address] = countersOf({ kind, id: '', network });
      const group = { names: [layout.lockoutCounter(address)], at: [0] };
      const found = refusal(group, await run(group, 'check', counterLimits(config, kind)));
      return found === undefined
        ? undefined
        : {
            kind: 'refuse',
            scope: scopeAt(kind, found.at),
            retryAfterSec: found.retryAfterSec,
            locked: found.locked,
          };
    },
  };
}

import type { LockoutConfig } from '../../config/config-schema.js';
import { RESERVATION_MS, type LockoutLimit } from '../../protection/lockout-policy.js';
import {
  countersOf,
  counterLimits,
  LOCKOUT_SCOPES,
  toRetryAfterSec,
  type AttemptOutcome,
  type LockoutAttempt,
  type LockStarted,
  type Lockout,
  type LockoutRefusal,
  type LockoutTarget,
} from '../../protection/lockout.js';
import { hashTag, type RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import type { LockoutReply } from './script-replies.js';
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

/** One run of scripts/lockout.lua on a group's counters. */
type LockoutRun = (
  group: SlotGroup,
  op: 'begin' | 'check' | AttemptOutcome,
  limits: readonly LockoutLimit[],
) => Promise<LockoutReply>;

/** A group's refusal, by the counter's position among the target's. */
interface GroupRefusal {
  readonly at: number;
  readonly retryAfterSec: number;
  readonly waitMs: number;
  readonly locked: boolean;
}

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
  const run: LockoutRun = (group, op, limits) =>
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

  return {
    async begin(target) {
      const groups = bySlot(countersOf(target).map(layout.lockoutCounter));
      const limits = counterLimits(config, target.kind);
      const refused = await reserve(run, groups, limits);
      if (refused !== undefined) return refusalOf(target.kind, refused);
      return { kind: 'allow', attempt: attemptOf(run, groups, limits, target.kind) };
    },
    async checkAddress(kind, network) {
      const [address] = countersOf({ kind, id: '', network });
      const group = { names: [layout.lockoutCounter(address)], at: [0] };
      const found = refusal(group, await run(group, 'check', counterLimits(config, kind)));
      return found === undefined ? undefined : refusalOf(kind, found);
    },
  };
}

/**
 * Reserves the attempt in every group, or in none: resolves with the longest refusal when
 * one refuses (the reservations made are given back), undefined when all reserved it.
 */
async function reserve(
  run: LockoutRun,
  groups: readonly SlotGroup[],
  limits: readonly LockoutLimit[],
): Promise<GroupRefusal | undefined> {
  // The id's slot first: a burst on one key is refused there, touching no other counter.
  const ordered = [...groups].sort((a, b) => Number(a.at.includes(0)) - Number(b.at.includes(0)));
  const reserved: SlotGroup[] = [];
  try {
    for (const [i, group] of ordered.entries()) {
      const refused = refusal(group, await run(group, 'begin', limits));
      if (refused !== undefined) {
        await giveBack(run, reserved, limits);
        // The longest refusal of all, as one script over the three counters answered: the
        // slots not asked yet are asked, reserving nothing.
        const later = await Promise.all(
          ordered.slice(i + 1).map(async (g) => refusal(g, await run(g, 'check', limits))),
        );
        const [longest = refused] = [refused, ...later]
          .flatMap((r) => (r === undefined ? [] : [r]))
          .sort((a, b) => b.waitMs - a.waitMs || a.at - b.at);
        return longest;
      }
      reserved.push(group);
    }
  } catch (error) {
    await giveBack(run, reserved, limits);
    throw error;
  }
  return undefined;
}

/** The attempt reserved in `groups`: settled once, in both slots at once. */
function attemptOf(
  run: LockoutRun,
  groups: readonly SlotGroup[],
  limits: readonly LockoutLimit[],
  kind: LockoutTarget['kind'],
): LockoutAttempt {
  let settled = false;
  return {
    async settle(outcome) {
      if (settled) return [];
      settled = true;
      const replies = await Promise.all(groups.map((g) => run(g, outcome, limits)));
      const locks: LockStarted[] = [];
      replies.forEach((reply, g) => {
        for (const lock of reply.locks)
          locks.push({
            scope: scopeAt(kind, groups[g]?.at[lock.index - 1] ?? 0),
            lockSec: lock.lockMs / 1000,
            failures: lock.failures,
          });
      });
      // In the order of the target's counters, as one script over all three gave them.
      const order = LOCKOUT_SCOPES[kind] as readonly string[];
      return locks.sort((a, b) => order.indexOf(a.scope) - order.indexOf(b.scope));
    },
  };
}

/** A group's refusal, by the counter's position among the target's, or undefined. */
function refusal(group: SlotGroup, reply: LockoutReply): GroupRefusal | undefined {
  const { refused } = reply;
  if (refused === undefined) return undefined;
  return {
    at: group.at[refused.index - 1] ?? 0,
    retryAfterSec: toRetryAfterSec(refused.waitMs),
    waitMs: refused.waitMs,
    locked: refused.locked,
  };
}

const refusalOf = (kind: LockoutTarget['kind'], found: GroupRefusal): LockoutRefusal => ({
  kind: 'refuse',
  scope: scopeAt(kind, found.at),
  retryAfterSec: found.retryAfterSec,
  locked: found.locked,
});

/** Gives reservations back (no verdict): the attempt does not go ahead. Never rejects. */
async function giveBack(
  run: LockoutRun,
  groups: readonly SlotGroup[],
  limits: readonly LockoutLimit[],
): Promise<void> {
  await Promise.allSettled(groups.map((g) => run(g, 'error', limits)));
}

function scopeAt(kind: LockoutTarget['kind'], at: number) {
  const scopes = LOCKOUT_SCOPES[kind];
  return scopes[at] ?? scopes[0];
}

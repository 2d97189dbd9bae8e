import { LRUCache } from 'lru-cache';
import {
  counterKey,
  countersOf,
  LOCKOUT_SCOPES,
  toRetryAfterSec,
  type Lockout,
  type LockoutRefusal,
  type LockoutTarget,
  type Unlock,
  unlockedCounters,
} from './lockout.js';

/** The lockout with the locks this process remembers, which an operator's unlock clears. */
export interface LocalLocks extends Lockout {
  /** Forgets the locks of what `unlock` names (`keys unlock`, heard on the channel). */
  forget(unlock: Unlock): void;
  /** Forgets every lock: an unlock may have been missed (the subscription was down). */
  forgetAll(): void;
}

/**
 * Remembers in this process the locks a shared lockout refused with, until their Retry-After:
 * while an address or a key is locked, a flood against it is refused here, with no Redis round
 * trip and no script run, so it costs the event loop (and Redis) little beside the requests
 * that count. A lock only ever grows while it holds (no attempt runs to clear it), so the
 * answer given here is the one the store would give. A refusal for attempts still in flight
 * is not remembered: the attempt it waits for may succeed a moment later (on this gateway or
 * another), and every client behind that address would then be refused here, for up to an
 * hour, while the store admits them.
 */
export function withLocalLocks(
  lockout: Lockout,
  now: () => number = Date.now,
  maxEntries = 100_000,
): LocalLocks {
  const until = new LRUCache<string, number>({ max: maxEntries });

  type Kind = LockoutTarget['kind'];
  const known = (kind: Kind, ids: readonly string[]): LockoutRefusal | undefined => {
    const at = now();
    for (const [index, id] of ids.entries()) {
      const end = until.get(id);
      if (end === undefined) continue;
      if (end <= at) {
        until.delete(id);
        continue;
      }
      const scope = LOCKOUT_SCOPES[kind][index] ?? LOCKOUT_SCOPES[kind][0];
      return { kind: 'refuse', scope, retryAfterSec: toRetryAfterSec(end - at), locked: true };
    }
    return undefined;
  };
  const remember = (kind: Kind, ids: readonly string[], refusal: LockoutRefusal) => {
    if (!refusal.locked) return;
    const index = (LOCKOUT_SCOPES[kind] as readonly string[]).indexOf(refusal.scope);
    const id = ids[index];
    if (id !== undefined) until.set(id, now() + refusal.retryAfterSec * 1000);
  };

  return {
    async begin(target) {
      const ids = countersOf(target).map(counterKey);
      const local = known(target.kind, ids);
      if (local !== undefined) return local;
      const decision = await lockout.begin(target);
      if (decision.kind === 'refuse') remember(target.kind, ids, decision);
      return decision;
    },
    async checkAddress(kind, network) {
      const ids = countersOf({ kind, id: '', network }).slice(0, 1).map(counterKey);
      const local = known(kind, ids);
      if (local !== undefined) return local;
      const refusal = await lockout.checkAddress(kind, network);
      if (refusal !== undefined) remember(kind, ids, refusal);
      return refusal;
    },
    forget(unlock) {
      const { exact, anyNetwork } = unlockedCounters(unlock);
      for (const counter of exact) until.delete(counterKey(counter));
      if (anyNetwork.length === 0) return;
      // A walk over every remembered lock: an operator's command, rare, and the map bounded.
      const prefixes = anyNetwork.map(counterKey);
      for (const id of [...until.keys()])
        if (prefixes.some((prefix) => id.startsWith(prefix))) until.delete(id);
    },
    forgetAll: () => until.clear(),
  };
}

import { LRUCache } from 'lru-cache';

/**
 * A map of at most `max` entries in two tiers: when it is full, the least recently used
 * ordinary entry makes room, and a guarded one only once no ordinary entry is left. The
 * in-process lockout keeps its counters here so that a flood of junk attempts (cheap from
 * IPv6, where every client holds a /64) evicts other junk, not the counters that hold an
 * attacker back.
 */
export interface CounterTable<V> {
  get(id: string): V | undefined;
  /** Stores `value` under `id`, in the guarded tier or the ordinary one. */
  set(id: string, value: V, guarded: boolean): void;
  delete(id: string): void;
}

export function createCounterTable<V extends object>(max: number): CounterTable<V> {
  // Each tier may hold the whole bound; `set` keeps their sum within it.
  const ordinary = new LRUCache<string, V>({ max });
  const guarded = new LRUCache<string, V>({ max });
  return {
    get: (id) => guarded.get(id) ?? ordinary.get(id),
    set(id, value, isGuarded) {
      const [into, other] = isGuarded ? [guarded, ordinary] : [ordinary, guarded];
      other.delete(id);
      if (!into.has(id) && ordinary.size + guarded.size >= max) {
        (ordinary.size > 0 ? ordinary : guarded).pop();
      }
      into.set(id, value);
    },
    delete(id) {
      ordinary.delete(id);
      guarded.delete(id);
    },
  };
}

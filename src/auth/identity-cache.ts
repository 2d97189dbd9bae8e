import { LRUCache } from 'lru-cache';
import type { CacheCounters } from '../identity/cache-counters.js';
import type { Identity } from '../identity/identity.js';

export interface IdentityCacheOptions {
  maxEntries: number;
  ttlMs: number;
  /** Milliseconds; injectable so tests can move time. Read on every lookup when given. */
  now?: () => number;
  /** Bounds the bytes too, for entries whose id is large (a token). */
  maxSize?: number;
  sizeOf?: (id: string) => number;
  /** Bumped in place on every lookup and eviction (the gateway's metrics read them). */
  counters?: CacheCounters;
}

/**
 * Verified identities by an id (the HMAC of a Basic pair, or a token's text), bounded in
 * count and time, and evictable by key and by subject at a cost that does not grow with
 * the cache: a revocation must not walk 100,000 entries on the event loop.
 */
export interface IdentityCache {
  get(id: string): Identity | undefined;
  /** As get(), but not counted as a hit or a miss: a lookup beside the cache's own use. */
  peek(id: string): Identity | undefined;
  /**
   * Caches `identity` for the cache's TTL, or less: never past `untilMs` (milliseconds since
   * the epoch, by the cache's clock), when the credential itself ends then (a token's `exp`,
   * a pair's expiry). Nothing is cached when that time has come.
   */
  set(id: string, identity: Identity, untilMs?: number): void;
  evictKey(key: string): void;
  evictSubject(subject: string): void;
  delete(id: string): void;
  clear(): void;
  readonly size: number;
}

/**
 * A map from a name to the ids filed under it. Almost every name has one id (a key has
 * one secret, most subjects one pair), so a single id is held as it is and a Set is made
 * only for the second: the index then costs one Map entry per cached credential.
 */
class Index {
  private readonly map = new Map<string, string | Set<string>>();

  add(name: string, id: string): void {
    const ids = this.map.get(name);
    if (ids === undefined) this.map.set(name, id);
    else if (typeof ids === 'string') {
      if (ids !== id) this.map.set(name, new Set([ids, id]));
    } else ids.add(id);
  }

  remove(name: string, id: string): void {
    const ids = this.map.get(name);
    if (ids === id) this.map.delete(name);
    else if (typeof ids === 'object') {
      ids.delete(id);
      if (ids.size === 0) this.map.delete(name);
    }
  }

  /** The ids under `name`, taken out of the index. */
  take(name: string): readonly string[] {
    const ids = this.map.get(name);
    this.map.delete(name);
    return ids === undefined ? [] : typeof ids === 'string' ? [ids] : [...ids];
  }

  clear(): void {
    this.map.clear();
  }
}

export function createIdentityCache(options: IdentityCacheOptions): IdentityCache {
  const now = options.now ?? Date.now;
  const counters = options.counters ?? { hits: 0, misses: 0, evictions: 0 };
  const ttlMs = Math.max(options.ttlMs, 1);
  const byKey = new Index();
  const bySubject = new Index();
  const sizing =
    options.maxSize === undefined || options.sizeOf === undefined
      ? {}
      : {
          maxSize: options.maxSize,
          sizeCalculation: (_: Identity, id: string) => options.sizeOf?.(id) ?? 1,
        };
  const cache = new LRUCache<string, Identity>({
    max: options.maxEntries,
    ttl: ttlMs,
    ttlAutopurge: false,
    ...sizing,
    ...(options.now === undefined
      ? {}
      : // Read the injected clock on every lookup: an entry must end exactly at its time.
        { perf: { now: options.now }, ttlResolution: 0 }),
    // Every way out of the cache (evicted, expired, replaced, deleted) leaves the indexes too.
    dispose: (identity, id, reason) => {
      if (reason === 'evict') counters.evictions += 1;
      if (identity.key !== undefined) byKey.remove(identity.key, id);
      bySubject.remove(identity.subject, id);
    },
  });
  const drop = (ids: readonly string[]): void => {
    for (const id of ids) cache.delete(id);
  };
  return {
    get(id) {
      const hit = cache.get(id);
      if (hit === undefined) counters.misses += 1;
      else counters.hits += 1;
      return hit;
    },
    peek: (id) => cache.get(id),
    set(id, identity, untilMs) {
      if (untilMs === undefined) cache.set(id, identity);
      else {
        // An entry never outlives its credential: min(cache TTL, what the credential has left).
        // lru-cache keeps an entry while `elapsed <= ttl`, and the credential is over once
        // `now >= untilMs`: the entry's last live millisecond is untilMs - 1. A TTL of 0
        // would mean "forever", so a credential with one millisecond left is not cached.
        const leftMs = untilMs - now() - 1;
        if (leftMs <= 0) return;
        cache.set(id, identity, { ttl: Math.min(ttlMs, leftMs) });
      }
      // Filed only once it is in: set() disposes of an entry with this id first, and may
      // refuse one over maxSize.
      if (!cache.has(id)) return;
      if (identity.key !== undefined) byKey.add(identity.key, id);
      bySubject.add(identity.subject, id);
    },
    evictKey: (key) => drop(byKey.take(key)),
    evictSubject: (subject) => drop(bySubject.take(subject)),
    delete: (id) => drop([id]),
    clear() {
      cache.clear();
      byKey.clear();
      bySubject.clear();
    },
    get size() {
      return cache.size;
    },
  };
}

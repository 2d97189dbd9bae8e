import { GatewayError } from '../errors/gateway-error.js';
import type { LastUseRecorder } from '../credentials/last-use-recorder.js';
import type { Identity } from '../identity/identity.js';
import type { AuthOutcome } from './denial.js';
import type { IdentityCache } from './identity-cache.js';
import { createCacheKeyFunction } from './pair-cache-key.js';

/**
 * A Basic authenticator's verified pairs, shared with the one that replaces it on a reload
 * that keeps the credential settings (gateway/verified-cache-settings.ts decides which).
 */
export interface VerifiedPairs {
  /** The id a pair is cached under (its HMAC under this cache's own random key). */
  readonly cacheKey: (encoded: string) => string;
  cache: IdentityCache;
  /**
   * The pairs cached before the last flushes: no longer served as verified, since a
   * revocation may have been missed, but served while the store cannot answer for them (they
   * were served all through the outage that caused the flush; a subscription standing again
   * does not mean the store answers yet, its breaker may still be open). Any answer of the
   * store ends their stay. They expire as they would have in the cache. A connection that
   * flaps flushes again before the store answers: the last few flushes are kept, newest first.
   */
  suspects: IdentityCache[];
  /**
   * Bumped by every eviction. A check reads the store, then spends tens of milliseconds in
   * bcrypt: a revocation arriving in between finds nothing to evict, so the check must not
   * cache what it read before it, and later requests must not share its answer. One counter
   * for all evictions: they are rare, and a spurious miss only costs one bcrypt run.
   */
  generation: number;
}

/** Flushes whose cached pairs stay suspect (served only while the store cannot answer). */
const MAX_SUSPECT_CACHES = 4;

/** A new authenticator's pairs: none verified yet, under a cache key of its own. */
export function createVerifiedPairs(cache: IdentityCache): VerifiedPairs {
  return { cacheKey: createCacheKeyFunction(), cache, suspects: [], generation: 0 };
}

export function evictPairsOfKey(pairs: VerifiedPairs, key: string): void {
  pairs.generation += 1;
  pairs.cache.evictKey(key);
  for (const suspect of pairs.suspects) suspect.evictKey(key);
}

export function evictPairsOfSubject(pairs: VerifiedPairs, subject: string): void {
  pairs.generation += 1;
  pairs.cache.evictSubject(subject);
  for (const suspect of pairs.suspects) suspect.evictSubject(subject);
}

/** The cached pairs become suspects; `fresh` takes the cache's place. */
export function flushPairs(pairs: VerifiedPairs, fresh: IdentityCache): void {
  pairs.generation += 1;
  if (pairs.cache.size > 0)
    pairs.suspects = [pairs.cache, ...pairs.suspects].slice(0, MAX_SUSPECT_CACHES);
  pairs.cache = fresh;
}

function suspectOf(pairs: VerifiedPairs, id: string): Identity | undefined {
  for (const suspect of pairs.suspects) {
    const identity = suspect.peek(id);
    if (identity !== undefined) return identity;
  }
  return undefined;
}

/** The store's answer; when it cannot give one, the pair as cached before the last flush. */
export async function orSuspect(
  pairs: VerifiedPairs,
  id: string,
  outcome: Promise<AuthOutcome>,
  lastUse: LastUseRecorder | undefined,
): Promise<AuthOutcome> {
  if (suspectOf(pairs, id) === undefined) return outcome;
  try {
    const answer = await outcome;
    for (const suspect of pairs.suspects) suspect.delete(id);
    return answer;
  } catch (error) {
    const stale = suspectOf(pairs, id);
    if (
      error instanceof GatewayError &&
      error.code === 'credential_store_unavailable' &&
      stale?.key !== undefined
    ) {
      lastUse?.touch(stale.key);
      return stale;
    }
    throw error;
  }
}

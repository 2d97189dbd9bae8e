import type { CacheCounters } from '../identity/cache-counters.js';
import type { LastUseRecorder } from '../credentials/last-use-recorder.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';
import type { Identity } from '../identity/identity.js';
import type { ClientAddressSource } from '../identity/client-address.js';
import type { LockoutGuard, PairCheckContext } from './basic-pair-check.js';
import { createPairVerify } from './basic-verify.js';
import type { AuthOutcome } from './denial.js';
import { createIdentityCache } from './identity-cache.js';
import { perConnection } from './per-connection.js';
import type { RehashOnUse } from './rehash-on-use.js';
import { createSecretVerifier, type SecretVerifier } from './secret-verifier.js';
import {
  createVerifiedPairs,
  evictPairsOfKey,
  evictPairsOfSubject,
  flushPairs,
  type VerifiedPairs,
} from './verified-pairs.js';
import type { VerifiedRecords } from './verified-records.js';

export type { VerifiedPairs } from './verified-pairs.js';

export interface BasicAuthenticatorOptions {
  store: CredentialStore;
  hasher: SecretHasher;
  /** A hash of a random secret with the store's cost, compared when the key is unknown. */
  dummyHash: string;
  cacheTtlSec: number;
  cacheMaxEntries: number;
  maxConcurrentHashes: number;
  maxQueuedHashes: number;
  /** Shares one bcrypt bound with other users of the hasher; made from the above if absent. */
  verifier?: SecretVerifier;
  /** Failed checks per address, per (key, address) and per key; none without it. */
  lockout?: LockoutGuard;
  /** Milliseconds since the epoch: decides expiry, and when cached pairs end. */
  now?: () => number;
  /** Told of every successful check, cache hits included; absent: last use is not kept. */
  lastUse?: LastUseRecorder;
  /** Brings the hash of a verified pair to the configured cost; absent: hashes stay as stored. */
  rehash?: RehashOnUse;
  /** The cache's lookups and evictions, counted in place (kept across reloads by the caller). */
  cacheCounters?: CacheCounters;
  /** The verified pairs of the authenticator this one replaces, made with the same settings. */
  verified?: VerifiedPairs;
  /** The fleet-wide verified records, checked before bcrypt; absent: bcrypt decides alone. */
  records?: VerifiedRecords;
}

export interface BasicAuthenticator {
  /**
   * A pair verified within the cache TTL, looked up by its credentials exactly as they
   * arrived (still base64): no parsing, no Redis, no bcrypt on the hot path. `connection`
   * (the client's socket) lets a keep-alive client's repeated credentials skip their HMAC.
   */
  cached(encoded: string, connection?: object): Identity | undefined;
  /**
   * Full check: the identity, or the invalid_credentials denial. Rejects with a
   * GatewayError for 503s (store down, overloaded) and for a lockout (429 `rate_limited`,
   * before bcrypt runs; before the store is read too, unless a verified record may prove the
   * secret: one that does lets it through as a cached pair is). `encoded` is the form the pair arrived in,
   * under which a success is cached; `from` gives the client address the lockout counts.
   */
  verify(
    key: string,
    secret: string,
    encoded?: string,
    from?: ClientAddressSource,
  ): Promise<AuthOutcome>;
  evictKey(key: string): void;
  evictSubject(subject: string): void;
  flush(): void;
  /** Pairs in the cache now. */
  cacheEntries(): number;
  /** The verified pairs, for the authenticator that replaces this one with the same settings. */
  readonly verified: VerifiedPairs;
}

/**
 * Caddy's model: verified pairs are cached in process, keyed by an HMAC of the whole pair
 * under a per-process random key, so the cache never holds a secret and an entry can only
 * be hit by the exact pair that was verified (secrets over bcrypt's 72 bytes are refused
 * before they get here, so no two secrets share a cache entry or a hash).
 */
export function createBasicAuthenticator(options: BasicAuthenticatorOptions): BasicAuthenticator {
  const now = options.now ?? Date.now;
  const newCache = () =>
    createIdentityCache({
      maxEntries: options.cacheMaxEntries,
      ttlMs: options.cacheTtlSec * 1000,
      // Read on every lookup: a cached pair must stop working at its expiry, not after.
      now,
      ...(options.cacheCounters === undefined ? {} : { counters: options.cacheCounters }),
    });
  // Handed over by the authenticator this one replaces (a reload that kept the settings the
  // cache depends on), so both, and the checks still running on the old one, share it.
  const pairs: VerifiedPairs = options.verified ?? createVerifiedPairs(newCache());
  // A keep-alive client's repeated credentials: their cache id once per connection.
  const connectionCacheKey = perConnection(pairs.cacheKey);
  const caching = options.cacheTtlSec > 0;
  const { lastUse } = options;
  const context: PairCheckContext = {
    store: options.store,
    verifier: options.verifier ?? createSecretVerifier(options),
    records: options.records,
    lastUse,
    rehash: options.rehash,
    now,
    pairs,
    caching,
  };
  return {
    cached(encoded, connection) {
      if (!caching) return undefined;
      const hit = pairs.cache.get(connectionCacheKey(encoded, connection));
      // A Basic identity always has its key; the check keeps the types honest.
      if (hit?.key !== undefined) lastUse?.touch(hit.key);
      return hit;
    },
    verify: createPairVerify(context, options.lockout),
    evictKey: (key) => evictPairsOfKey(pairs, key),
    evictSubject: (subject) => evictPairsOfSubject(pairs, subject),
    flush: () => flushPairs(pairs, newCache()),
    cacheEntries: () => pairs.cache.size,
    verified: pairs,
  };
}

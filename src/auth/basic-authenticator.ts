import { hash, randomInt } from 'node:crypto';
import type { CacheCounters } from '../identity/cache-counters.js';
import { GatewayError } from '../errors/gateway-error.js';
import { createSingleFlight } from '../concurrency/single-flight.js';
import { isUsable, type CredentialStore, type KeyRecord } from '../credentials/credential-store.js';
import type { LastUseRecorder } from '../credentials/last-use-recorder.js';
import { MAX_SECRET_BYTES, type SecretHasher } from '../credentials/secret-hasher.js';
import type { Identity } from '../identity/identity.js';
import { MAX_KEY_CHARS, parseKeyId } from '../identity/key-id.js';
import { NO_SCOPES } from '../identity/scopes.js';
import { guardAttempt, type LockoutEvents } from '../protection/guard-attempt.js';
import type { ClientAddress, ClientAddressSource } from '../identity/client-address.js';
import type { Lockout, LockoutTarget } from '../protection/lockout.js';
import { DENIED, isDenial, type AuthOutcome } from './denial.js';
import { createIdentityCache, type IdentityCache } from './identity-cache.js';
import { perConnection } from './per-connection.js';
import type { RehashOnUse } from './rehash-on-use.js';
import { createSecretVerifier, type SecretVerifier } from './secret-verifier.js';
import type { VerifiedRecords } from './verified-records.js';

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
  lockout?: { readonly lockout: Lockout; readonly events: LockoutEvents };
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
 * A Basic authenticator's verified pairs, shared with the one that replaces it on a reload
 * that keeps the credential settings (app.ts decides which).
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

/** How the lockout counts a check's outcome. */
const judge = (outcome: AuthOutcome) => (isDenial(outcome) ? 'invalid_credentials' : 'success');

/** A caller that gave no client address (tests, the CLI): counted under the empty one. */
const NO_ADDRESS: ClientAddress = { address: '', network: '' };

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
  const state: VerifiedPairs = options.verified ?? {
    cacheKey: createCacheKeyFunction(),
    cache: newCache(),
    suspects: [],
    generation: 0,
  };
  const { cacheKey } = state;
  // A keep-alive client's repeated credentials: their cache id once per connection.
  const connectionCacheKey = perConnection(cacheKey);
  const suspectOf = (id: string): Identity | undefined => {
    for (const suspect of state.suspects) {
      const identity = suspect.peek(id);
      if (identity !== undefined) return identity;
    }
    return undefined;
  };
  const caching = options.cacheTtlSec > 0;
  const { lastUse } = options;
  const singleFlight = createSingleFlight<AuthOutcome>();
  const guardedFlight = createSingleFlight<AuthOutcome>();
  const verifier = options.verifier ?? createSecretVerifier(options);

  /** The pair proved by its verified record, or undefined: then bcrypt decides. */
  const byRecord = async (
    pair: KeyRecord | undefined,
    secret: string,
    id: string,
    readAt: number,
  ): Promise<Identity | undefined> =>
    pair !== undefined &&
    isUsable(pair, now()) &&
    (await options.records?.proves(pair, secret)) === true
      ? accepted(pair, secret, id, readAt)
      : undefined;

  /** bcrypt's verdict on the pair as read (undefined: unknown). */
  const byBcrypt = async (
    pair: KeyRecord | undefined,
    secret: string,
    id: string,
    readAt: number,
  ): Promise<AuthOutcome> => {
    // An unknown, revoked or expired key still pays one compare against the dummy hash, so
    // neither the answer nor its timing tells them apart.
    const usable = pair !== undefined && isUsable(pair, now());
    const matches = await verifier.verify(secret, usable ? pair.secretHash : undefined);
    // Checked again after bcrypt's tens of milliseconds: the pair may have expired meanwhile.
    if (!matches || pair === undefined || !isUsable(pair, now())) return DENIED.invalid_credentials;
    options.records?.afterBcrypt(pair, secret);
    return accepted(pair, secret, id, readAt);
  };

  /**
   * The pair read with its verified record (the same round trip): one HMAC instead of bcrypt
   * when the record proves it. A wrong secret never matches a record and goes on to bcrypt.
   */
  const check = async (
    key: string,
    secret: string,
    id: string,
    readAt: number,
  ): Promise<AuthOutcome> => {
    const pair = await options.store.getKey(key);
    return (await byRecord(pair, secret, id, readAt)) ?? byBcrypt(pair, secret, id, readAt);
  };

  /**
   * A secret of a form a record may prove, under the lockout: the pair is read first, and a
   * success its record proves is known without a compare, like a cache hit, so the lockout is
   * not asked (a cached pair skips it the same way; a reservation bounds guesses whose verdict
   * is still to come, and counting these would refuse a fleet's own parallel clients, 64 cold
   * connections from one network after a restart, as guesses in flight). Anything else is an
   * attempt like every other: reserved (a locked target refused) before bcrypt, then counted.
   */
  const recordThenGuard = async (
    guard: NonNullable<BasicAuthenticatorOptions['lockout']>,
    target: LockoutTarget,
    key: string,
    secret: string,
    id: string,
    readAt: number,
  ): Promise<AuthOutcome> => {
    const pair = await options.store.getKey(key);
    const proved = await byRecord(pair, secret, id, readAt);
    if (proved !== undefined) return proved;
    const compare = () =>
      singleFlight.run(`${readAt}:${id}`, () => byBcrypt(pair, secret, id, readAt));
    return guardAttempt(guard.lockout, guard.events, target, compare, judge);
  };

  /** A pair proved (by bcrypt or its record): cached unless an eviction came meanwhile. */
  const accepted = (record: KeyRecord, secret: string, id: string, readAt: number): Identity => {
    const { key } = record;
    const identity: Identity = {
      subject: record.subject,
      method: 'basic',
      key,
      scopes: record.scopes.length === 0 ? NO_SCOPES : record.scopes,
    };
    // The entry ends with the pair: min(cache TTL, expiry - now).
    const endsAt = record.expiresAt === undefined ? undefined : Date.parse(record.expiresAt);
    if (caching && readAt === state.generation) state.cache.set(id, identity, endsAt);
    options.lastUse?.touch(key);
    options.rehash?.afterSuccess({ kind: 'key', key }, secret, record.secretHash);
    return identity;
  };

  /** The store's answer; when it cannot give one, the pair as cached before the last flush. */
  const orSuspect = async (id: string, outcome: Promise<AuthOutcome>): Promise<AuthOutcome> => {
    if (suspectOf(id) === undefined) return outcome;
    try {
      const answer = await outcome;
      for (const suspect of state.suspects) suspect.delete(id);
      return answer;
    } catch (error) {
      const stale = suspectOf(id);
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
  };

  return {
    cached(encoded, connection) {
      if (!caching) return undefined;
      const hit = state.cache.get(connectionCacheKey(encoded, connection));
      // A Basic identity always has its key; the check keeps the types honest.
      if (hit?.key !== undefined) lastUse?.touch(hit.key);
      return hit;
    },
    verify(key, secret, encoded = Buffer.from(`${key}:${secret}`).toString('base64'), from) {
      const guard = options.lockout;
      if (
        secret === '' ||
        key === '' ||
        Buffer.byteLength(secret) > MAX_SECRET_BYTES ||
        key.length > MAX_KEY_CHARS ||
        parseKeyId(key).kind === 'malformed'
      ) {
        // Refused without a compare, so not counted: logged only. A malformed id (the new form's
        // length and prefix, its checksum failing) pays no dummy compare either: the gateway never
        // makes one and docs/redis-layout.md bars other writers from it, the checksum is public, so
        // its quick answer tells a caller nothing it could not compute, and a flood of forged ids
        // costs neither a store read nor bcrypt.
        const client = from?.clientAddress() ?? NO_ADDRESS;
        guard?.events.failed({ kind: 'basic', id: key, ...client }, 'unusable_credentials');
        return Promise.resolve(DENIED.invalid_credentials);
      }
      const id = cacheKey(encoded);
      const readAt = state.generation;
      // Keyed by generation too: a request arriving after an eviction starts its own check,
      // which reads the store again, instead of joining one that read it before.
      const run = () => singleFlight.run(`${readAt}:${id}`, () => check(key, secret, id, readAt));
      if (guard === undefined) return orSuspect(id, run());
      // Checked and counted per client network before it may join a check. Callers sending
      // the same pair from the same network at once share one attempt: it is one guess, and a
      // busy client whose cached pair has just expired must not spend its (key, address)
      // threshold on its own parallel connections.
      const client = from?.clientAddress() ?? NO_ADDRESS;
      const target = { kind: 'basic', id: key, ...client } as const;
      const attempt =
        options.records?.mayProve(secret) === true
          ? () => recordThenGuard(guard, target, key, secret, id, readAt)
          : () => guardAttempt(guard.lockout, guard.events, target, run, judge);
      return orSuspect(id, guardedFlight.run(`${readAt}:${id}:${client.network}`, attempt));
    },
    evictKey(key) {
      state.generation += 1;
      state.cache.evictKey(key);
      for (const suspect of state.suspects) suspect.evictKey(key);
    },
    evictSubject(subject) {
      state.generation += 1;
      state.cache.evictSubject(subject);
      for (const suspect of state.suspects) suspect.evictSubject(subject);
    },
    flush() {
      state.generation += 1;
      if (state.cache.size > 0)
        state.suspects = [state.cache, ...state.suspects].slice(0, MAX_SUSPECT_CACHES);
      state.cache = newCache();
    },
    cacheEntries: () => state.cache.size,
    verified: state,
  };
}

/**
 * The id a pair is cached under: HMAC-SHA256's construction (RFC 2104,
 * H(K ^ opad || H(K ^ ipad || m))) under a per-process random key, the inner digest
 * hex-encoded, computed with two one-shot hashes. It runs on every cached request:
 * crypto.hash() needs no Hmac object and costs about 1.8 µs here, against 4.5 µs for
 * createHmac() with a KeyObject (23 µs with a raw key, which it re-imports on every call).
 * The key's bytes are below 0x80 (448 random bits) so that the pads are ASCII and the
 * one-shot hash, which encodes strings as UTF-8, hashes exactly those bytes.
 *
 * The same encoded bytes always decode to the same pair, and only a verified pair is ever
 * stored, so a hit under the encoded form is a hit for exactly that pair.
 */
function createCacheKeyFunction(): (encoded: string) => string {
  const key = Array.from({ length: 64 }, () => randomInt(128));
  const pad = (mask: number): string => String.fromCharCode(...key.map((byte) => byte ^ mask));
  const inner = pad(0x36);
  const outer = pad(0x5c);
  // The 32 digest bytes as a one-byte ('binary', i.e. latin1) string: 12 bytes less per
  // cached pair than base64.
  return (encoded) => hash('sha256', outer + hash('sha256', inner + encoded, 'hex'), 'binary');
}

import { createBasicAuthenticator, type BasicAuthenticator } from '../auth/basic-authenticator.js';
import type { VerifiedPairs } from '../auth/basic-authenticator.js';
import type { IdentityCache } from '../auth/identity-cache.js';
import { createBearerVerifier, type BearerVerifier } from '../auth/jwt/bearer-verifier.js';
import { createTokenUserCheck } from '../auth/jwt/check-token-user.js';
import { createKeySource, type KeySource } from '../auth/jwt/key-sources.js';
import { createRehashOnUse, type RehashOnUse } from '../auth/rehash-on-use.js';
import { createSecretVerifier, type SecretVerifier } from '../auth/secret-verifier.js';
import { createVerifiedRecords, type VerifiedRecords } from '../auth/verified-records.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { configuredFleetKey } from '../credentials/fleet-key-setting.js';
import { createLastUseRecorder, type LastUseRecorder } from '../credentials/last-use-recorder.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';
import type { JwksKeySetTime } from '../observability/metrics.js';
import type { LockoutEvents } from '../protection/guard-attempt.js';
import type { Lockout } from '../protection/lockout.js';
import {
  GATEWAY_TOKEN_SOURCE,
  TOKEN_GENERATION_CLAIM,
  type TokenSigner,
} from '../tokens/token-signer.js';
import type { ChainDeps } from './chain-deps.js';
import { lockoutEvents } from './lockout-events.js';
import { recordEvents } from './record-events.js';
import { reportRehash } from './rehash-events.js';

/** Key pairs and passwords: the Basic authenticator and what the own endpoints share with it. */
export interface BasicAuth {
  readonly basic: BasicAuthenticator;
  readonly verifier: SecretVerifier;
  readonly rehash: RehashOnUse;
  readonly lockout: Lockout;
  readonly lockoutEvents: LockoutEvents;
  /** Undefined when last uses are not kept (`keys.lastUsedIntervalSec: 0`). */
  readonly lastUse: LastUseRecorder | undefined;
}

/** A key source of a configured issuer, named as its metrics and logs name it. */
export interface Issuer {
  readonly label: string;
  readonly source: KeySource;
}

export interface BearerAuth {
  readonly bearer: BearerVerifier;
  readonly issuers: readonly Issuer[];
}

/** `lockout.enabled: false`: every attempt allowed, nothing counted. */
const OPEN_LOCKOUT: Lockout = {
  begin: () => Promise.resolve({ kind: 'allow', attempt: { settle: () => Promise.resolve([]) } }),
  checkAddress: () => Promise.resolve(undefined),
};

/** `kept`: the verified pairs of the chain a reload replaces, when still valid. */
export function buildBasicAuth(
  config: GatewayConfig,
  deps: ChainDeps,
  kept: VerifiedPairs | undefined,
): BasicAuth {
  const store = deps.backend.credentials;
  const countedHasher: SecretHasher = {
    hash: (secret) => deps.hasher.hash(secret),
    verify: (secret, hash) => {
      deps.metrics.countBcryptCompare();
      return deps.hasher.verify(secret, hash);
    },
  };
  // Off (`lockout.enabled: false`): nothing counted, failures still logged and counted.
  const lockout = config.lockout.enabled ? deps.backend.lockout(config.lockout) : OPEN_LOCKOUT;
  const events = lockoutEvents(deps.logger, deps.metrics);
  // One bound on bcrypt for Basic checks, password exchanges and new pairs alike.
  const hashing = {
    hasher: countedHasher,
    dummyHash: deps.dummyHash,
    maxConcurrentHashes: config.auth.basic.maxConcurrentHashes,
    maxQueuedHashes: config.auth.basic.maxQueuedHashes,
  };
  const verifier = createSecretVerifier({
    ...hashing,
    onRefused: () => deps.metrics.countBcryptRefusal(),
  });
  // Hashes of another cost or variant are rewritten on their next success (mixed costs tell
  // known keys from unknown ones by time), within the same bcrypt bound.
  const rehash = createRehashOnUse({
    store,
    verifier,
    onRehash: (event) => reportRehash(deps.logger, deps.metrics, event),
  });
  const lastUse = buildLastUse(config, deps);
  const records = buildVerifiedRecords(config, deps);
  const basic = createBasicAuthenticator({
    store,
    ...(records && { records }),
    ...hashing,
    verifier,
    rehash,
    lockout: { lockout, events },
    cacheTtlSec: config.auth.basic.cache.ttlSec,
    cacheMaxEntries: config.auth.basic.cache.maxEntries,
    now: deps.now,
    ...(lastUse === undefined ? {} : { lastUse }),
    cacheCounters: deps.metrics.cache.basic,
    ...(kept && { verified: kept }),
  });
  return { basic, verifier, rehash, lockout, lockoutEvents: events, lastUse };
}

/** Last use of each pair, written in batches (keys.lastUsedIntervalSec; 0: not kept). */
function buildLastUse(config: GatewayConfig, deps: ChainDeps): LastUseRecorder | undefined {
  if (config.keys.lastUsedIntervalSec === 0) return undefined;
  const store = deps.backend.credentials;
  return createLastUseRecorder({
    write: (uses) => store.recordLastUse(uses),
    intervalMs: config.keys.lastUsedIntervalSec * 1000,
    now: deps.now,
    onError: (err: unknown) =>
      deps.logger.warn({ err }, 'last use of key pairs not recorded; retried next batch'),
  });
}

function buildVerifiedRecords(config: GatewayConfig, deps: ChainDeps): VerifiedRecords | undefined {
  const settings = config.auth.basic.verifiedRecords;
  if (!settings.enabled) return undefined;
  return createVerifiedRecords({
    store: deps.backend.credentials,
    fleetKey: configuredFleetKey(settings),
    ttlSec: settings.ttlSec,
    now: deps.now,
    events: recordEvents(deps.logger, deps.metrics),
  });
}

/**
 * Tokens: the gateway's own (the signer's key source) and each configured issuer's. `kept`:
 * the verified tokens of the chain a reload replaces, when still valid.
 */
export function buildBearerAuth(
  config: GatewayConfig,
  deps: ChainDeps,
  signer: TokenSigner,
  kept: IdentityCache | undefined,
): BearerAuth {
  const { now } = deps;
  const issuers = config.auth.bearer.issuers.map((issuer) => {
    const label = issuer.issuer ?? issuer.name;
    const fetches = issuer.jwksUrl === undefined ? undefined : deps.metrics.jwksFetches(label);
    const onFetchFailure = deps.jwksFetchFailed?.(label);
    return {
      label,
      source: createKeySource(issuer, {
        now,
        ...(fetches && { fetches }),
        ...(onFetchFailure && { onFetchFailure }),
      }),
    };
  });
  const bearer = createBearerVerifier({
    sources: [signer.keySource, ...issuers.map(({ source }) => source)],
    clockToleranceSec: config.auth.bearer.clockToleranceSec,
    cacheTtlSec: config.auth.bearer.cache.ttlSec,
    cacheMaxEntries: config.auth.bearer.cache.maxEntries,
    now,
    cacheCounters: deps.metrics.cache.bearer,
    ...(kept && { verified: kept }),
    ownTokens: {
      source: GATEWAY_TOKEN_SOURCE,
      check: createTokenUserCheck(deps.backend.credentials, TOKEN_GENERATION_CLAIM),
    },
  });
  return { bearer, issuers };
}

/** When the key set in use of each JWKS issuer was fetched (those fetched so far). */
export function jwksFetchedAt(issuers: readonly Issuer[]): JwksKeySetTime[] {
  return issuers.flatMap(({ label, source }) => {
    const fetchedAtMs = source.fetchedAtMs?.();
    return fetchedAtMs === undefined ? [] : [{ issuer: label, fetchedAtMs }];
  });
}

import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  jwksCache,
  type JSONWebKeySet,
  type JWKSCacheInput,
  type JWTVerifyGetKey,
} from 'jose';
import type { BearerIssuerConfig } from '../../config/config-schema.js';
import type { FetchCounters } from '../../identity/fetch-counters.js';

/** A verifying key as jose takes it: a secret, a public key, or a resolver (JWKS). */
export type VerificationKey = Uint8Array | KeyObject | JWTVerifyGetKey;

export interface KeySource {
  readonly name: string;
  readonly algorithms: readonly string[];
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  readonly key: VerificationKey;
  /** A JWKS: when the key set in use was fetched (ms since the epoch); none yet: undefined. */
  readonly fetchedAtMs?: () => number | undefined;
}

/** A remote JWKS as jose takes it, and when its key set in use was fetched. */
export type RemoteKeySet = JWTVerifyGetKey & { readonly fetchedAtMs: () => number | undefined };

export interface KeySourceOptions {
  /** Replaces `jwks.timeoutMs` (check --connect's own bound). */
  readonly fetchTimeoutMs?: number;
  /** A JWKS's fetches, counted in place (kept across reloads by the caller). */
  readonly fetches?: FetchCounters;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  /** A JWKS fetch gave no key set: why, in a few words (never a token, nor the body). */
  readonly onFetchFailure?: (reason: string) => void;
}

/** The JWKS endpoint could not be reached or read: a technical failure (503), never a 401. */
export class KeySourceUnavailableError extends Error {
  constructor(cause: unknown) {
    super('key source unavailable', { cause });
    this.name = 'KeySourceUnavailableError';
  }
}

export type JwksTiming = NonNullable<BearerIssuerConfig['jwks']>;

/** The defaults of `auth.bearer.issuers[].jwks` (config-schema), for an issuer without it. */
export const DEFAULT_JWKS_TIMING: JwksTiming = {
  cacheMaxAgeMs: 600_000,
  cooldownMs: 30_000,
  timeoutMs: 2_000,
  failureBackoffMs: 1_000,
  maxFailureBackoffMs: 60_000,
};

export function createKeySource(
  config: BearerIssuerConfig,
  options: KeySourceOptions = {},
): KeySource {
  const base = {
    name: config.name,
    algorithms: config.algorithms,
    issuer: config.issuer,
    audience: config.audience,
  };
  if (config.secret !== undefined) return { ...base, key: new TextEncoder().encode(config.secret) };
  if (config.jwksUrl !== undefined) {
    const { fetchTimeoutMs, fetches, now, onFetchFailure } = options;
    const key = createResilientRemoteJwks(
      new URL(config.jwksUrl),
      {
        ...(config.jwks ?? DEFAULT_JWKS_TIMING),
        ...(fetchTimeoutMs === undefined ? {} : { timeoutMs: fetchTimeoutMs }),
      },
      now,
      fetches,
      onFetchFailure,
    );
    return { ...base, key, fetchedAtMs: key.fetchedAtMs };
  }
  const text = config.publicKey ?? readFileSync(config.publicKeyFile ?? '', 'utf8');
  const key = text.trimStart().startsWith('{')
    ? createPublicKey({ key: JSON.parse(text) as JsonWebKey, format: 'jwk' })
    : createPublicKey(text);
  return { ...base, key };
}

/**
 * jose's remote JWKS with stale-if-error and backoff added: once its cache is stale and the
 * endpoint fails, jose would fail (and refetch on) every verification. Here the last good
 * key set keeps verifying, the endpoint is retried at most once per backoff period, and
 * only when no key set was ever fetched does verification fail, as "unavailable".
 *
 * A `kid` missing from the last good set is "no such key" (401) while the endpoint cannot be
 * read, as when it can: were it a 503, any junk token with a random `kid` (no key, no
 * signature needed) would page whoever watches the 503s for the length of the outage. The
 * price: a token signed with a key the issuer published after the last good fetch gets 401
 * until the endpoint answers again; issuers publish a key ahead of signing with it, so only a
 * key both published and used within the outage is hit. jose's cooldown (30 s between refetches for unknown `kid`s) keeps random `kid`s from
 * hammering the endpoint, and the failure backoff from retrying it while it fails.
 */
export function createResilientRemoteJwks(
  url: URL,
  timing: JwksTiming | number,
  now: () => number = Date.now,
  fetches: FetchCounters = { fetches: 0, failures: 0 },
  onFetchFailure: (reason: string) => void = () => undefined,
): RemoteKeySet {
  // A bare number is the fetch timeout, with the other settings at their defaults.
  const settings =
    typeof timing === 'number' ? { ...DEFAULT_JWKS_TIMING, timeoutMs: timing } : timing;
  // jose writes every key set it fetches into this object (a new `jwks` object per fetch),
  // so the stale copy is rebuilt once per fetch; remote.jwks() would clone on every call.
  const fetched: { jwks?: JSONWebKeySet; uat?: number } = {};
  let fetchedAtMs: number | undefined;
  const remote = createRemoteJWKSet(url, {
    timeoutDuration: settings.timeoutMs,
    cooldownDuration: settings.cooldownMs,
    cacheMaxAge: settings.cacheMaxAgeMs,
    [jwksCache]: fetched as JWKSCacheInput,
    [customFetch]: countedFetch(fetches, () => (fetchedAtMs = now()), onFetchFailure),
  });
  let lastGood: JSONWebKeySet | undefined;
  let stale: JWTVerifyGetKey | undefined;
  let lastFailure: unknown;
  let retryAt = 0;
  let backoffMs = settings.failureBackoffMs;
  const remember = (): void => {
    if (fetched.jwks !== undefined && fetched.jwks !== lastGood) {
      lastGood = fetched.jwks;
      stale = createLocalJWKSet(fetched.jwks);
    }
  };
  // JWKSNoMatchingKey (a 401) included; for JWKSMultipleMatchingKeys, jwtVerify tries each
  // candidate it carries.
  const fromStale =
    (cause: unknown): JWTVerifyGetKey =>
    (header, token) => {
      if (stale === undefined) throw new KeySourceUnavailableError(cause);
      return stale(header, token);
    };
  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (now() < retryAt) return fromStale(lastFailure)(header, token);
    try {
      const key = await remote(header, token);
      remember();
      backoffMs = settings.failureBackoffMs;
      return key;
    } catch (error) {
      if (
        error instanceof errors.JWKSNoMatchingKey ||
        error instanceof errors.JWKSMultipleMatchingKeys
      ) {
        // The endpoint answered (or was read within the cooldown): a real "no such key".
        remember();
        throw error;
      }
      lastFailure = error;
      retryAt = now() + backoffMs;
      backoffMs = Math.min(backoffMs * 2, settings.maxFailureBackoffMs);
      return fromStale(error)(header, token);
    }
  };
  return Object.assign(getKey, { fetchedAtMs: () => fetchedAtMs });
}

/**
 * jose's fetch of a JWKS, counted: a fetch fails unless it ends in what jose takes as a key
 * set (200, JSON, a JSON Web Key Set: the same checks, made first here, so a body jose would
 * refuse counts as failed). jose reads only the status and the body of what this returns.
 * Each failure is also told, by why: the status, a timeout, no answer, not a key set.
 */
function countedFetch(
  counters: FetchCounters,
  fetchedOk: () => void,
  failed: (reason: string) => void,
): (url: string, init: RequestInit) => Promise<Response> {
  const fail = (reason: string): void => {
    counters.failures += 1;
    failed(reason);
  };
  return async (url, init) => {
    counters.fetches += 1;
    let body: string;
    try {
      const response = await fetch(url, init);
      if (response.status !== 200) {
        fail(`status ${response.status}`);
        return response;
      }
      body = await response.text();
    } catch (error) {
      fail(unreachable(error));
      throw error;
    }
    try {
      createLocalJWKSet(JSON.parse(body) as JSONWebKeySet);
    } catch (error) {
      fail('not a JSON Web Key Set');
      throw error;
    }
    fetchedOk();
    return new Response(body, { status: 200 });
  };
}

/** Why a fetch threw: jose's timeout aborts it; fetch() puts the socket's error in `cause`. */
function unreachable(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return 'timeout';
  const cause = error instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? `no answer (${code})` : 'no answer';
}

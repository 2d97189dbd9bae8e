import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwksCache,
  type JSONWebKeySet,
  type JWKSCacheInput,
  type JWTVerifyGetKey,
} from 'jose';
import type { BearerIssuerConfig } from '../../config/config-schema.js';

/** A verifying key as jose takes it: a secret, a public key, or a resolver (JWKS). */
export type VerificationKey = Uint8Array | KeyObject | JWTVerifyGetKey;

export interface KeySource {
  readonly name: string;
  readonly algorithms: readonly string[];
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  readonly key: VerificationKey;
}

/** The JWKS endpoint could not be reached or read: a technical failure (503), never a 401. */
export class KeySourceUnavailableError extends Error {
  constructor(cause: unknown) {
    super('key source unavailable', { cause });
    this.name = 'KeySourceUnavailableError';
  }
}

export function createKeySource(config: BearerIssuerConfig, fetchTimeoutMs = 2_000): KeySource {
  const base = {
    name: config.name,
    algorithms: config.algorithms,
    issuer: config.issuer,
    audience: config.audience,
  };
  if (config.secret !== undefined) return { ...base, key: new TextEncoder().encode(config.secret) };
  if (config.jwksUrl !== undefined)
    return { ...base, key: createResilientRemoteJwks(new URL(config.jwksUrl), fetchTimeoutMs) };
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
 * A `kid` missing from the last good set is "unavailable" too while the endpoint cannot be
 * read: the issuer may have rotated to a key published after that set was fetched, so the
 * gateway cannot tell a forged token from a fresh one, and "cannot tell" is a 503, never a
 * 401. Only a set just read from the endpoint can say "no such key" (401). jose's cooldown
 * (30 s between refetches for unknown `kid`s) keeps random `kid`s from hammering it.
 */
export function createResilientRemoteJwks(
  url: URL,
  timeoutMs: number,
  now: () => number = Date.now,
): JWTVerifyGetKey {
  // jose writes every key set it fetches into this object (a new `jwks` object per fetch),
  // so the stale copy is rebuilt once per fetch; remote.jwks() would clone on every call.
  const fetched: { jwks?: JSONWebKeySet; uat?: number } = {};
  const remote = createRemoteJWKSet(url, {
    timeoutDuration: timeoutMs,
    cooldownDuration: 30_000,
    cacheMaxAge: 600_000,
    [jwksCache]: fetched as JWKSCacheInput,
  });
  let lastGood: JSONWebKeySet | undefined;
  let stale: JWTVerifyGetKey | undefined;
  let lastFailure: unknown;
  let retryAt = 0;
  let backoffMs = 1_000;
  const remember = (): void => {
    if (fetched.jwks !== undefined && fetched.jwks !== lastGood) {
      lastGood = fetched.jwks;
      stale = createLocalJWKSet(fetched.jwks);
    }
  };
  const fromStale: (cause: unknown) => JWTVerifyGetKey = (cause) => async (header, token) => {
    if (stale === undefined) throw new KeySourceUnavailableError(cause);
    try {
      return await stale(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) throw new KeySourceUnavailableError(cause);
      // JWKSMultipleMatchingKeys included: jwtVerify tries each candidate it carries.
      throw error;
    }
  };
  return async (header, token) => {
    if (now() < retryAt) return fromStale(lastFailure)(header, token);
    try {
      const key = await remote(header, token);
      remember();
      backoffMs = 1_000;
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
      backoffMs = Math.min(backoffMs * 2, 60_000);
      return fromStale(error)(header, token);
    }
  };
}

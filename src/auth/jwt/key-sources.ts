import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
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
 */
export function createResilientRemoteJwks(
  url: URL,
  timeoutMs: number,
  now: () => number = Date.now,
): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(url, {
    timeoutDuration: timeoutMs,
    cooldownDuration: 30_000,
    cacheMaxAge: 600_000,
  });
  let lastGood: JSONWebKeySet | undefined;
  let stale: JWTVerifyGetKey | undefined;
  let retryAt = 0;
  let backoffMs = 1_000;
  const fallback = (cause: unknown): JWTVerifyGetKey => {
    if (stale !== undefined) return stale;
    throw new KeySourceUnavailableError(cause);
  };
  return async (header, token) => {
    if (now() < retryAt) return fallback(undefined)(header, token);
    try {
      const key = await remote(header, token);
      const current = remote.jwks();
      if (current !== undefined && current !== lastGood) {
        lastGood = current;
        stale = createLocalJWKSet(current);
      }
      backoffMs = 1_000;
      return key;
    } catch (error) {
      if (
        error instanceof errors.JWKSNoMatchingKey ||
        error instanceof errors.JWKSMultipleMatchingKeys
      )
        throw error;
      retryAt = now() + backoffMs;
      backoffMs = Math.min(backoffMs * 2, 60_000);
      return fallback(error)(header, token);
    }
  };
}

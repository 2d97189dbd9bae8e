import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import type { CacheCounters } from '../../identity/cache-counters.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { SUBJECT } from '../../identity/identity-formats.js';
import type { Identity } from '../../identity/identity.js';
import { parseScopeList, uniqueScopes } from '../../identity/scopes.js';
import { deny, type AuthOutcome, type Denial } from '../denial.js';
import { createIdentityCache, type IdentityCache } from '../identity-cache.js';
import type { TokenUserCheck } from './check-token-user.js';
import { KeySourceUnavailableError, type KeySource } from './key-sources.js';

export interface BearerVerifierOptions {
  sources: readonly KeySource[];
  clockToleranceSec: number;
  cacheTtlSec: number;
  cacheMaxEntries: number;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
  /** The cache's lookups and evictions, counted in place (kept across reloads by the caller). */
  cacheCounters?: CacheCounters;
  /** The verified tokens of the verifier this one replaces, made with the same settings. */
  verified?: IdentityCache;
  /**
   * The gateway's own tokens: the name of their source, and whether a token's user still
   * holds it (check-token-user.ts). A token it refuses is invalid_token.
   */
  ownTokens?: { readonly source: string; readonly check: TokenUserCheck };
}

export interface BearerVerifier {
  /** A token verified earlier and not yet expired: no signature check. */
  cached(token: string): Identity | undefined;
  /**
   * The identity, or a denial (invalid_token, token_expired). Rejects with a GatewayError
   * only when a key source cannot answer (credential_store_unavailable).
   */
  verify(token: string): Promise<AuthOutcome>;
  evictSubject(subject: string): void;
  /** Tokens in the cache now. */
  cacheEntries(): number;
  /** The verified tokens, for the verifier that replaces this one with the same settings. */
  readonly verified: IdentityCache;
}

/**
 * Verifies with jose. Every source carries its own algorithm allow-list (without one, jose
 * lets HS/RS confusion through as a plain TypeError); `exp` and `sub` are required (jose
 * treats `exp` as optional); a future `iat` is refused (jose checks it only with
 * maxTokenAge). Verified tokens are cached by their exact text until min(TTL, exp).
 */
export function createBearerVerifier(options: BearerVerifierOptions): BearerVerifier {
  const now = options.now ?? Date.now;
  const cache =
    options.verified ??
    createIdentityCache({
      maxEntries: options.cacheMaxEntries,
      // Tokens are bounded by auth.bearer.maxTokenBytes; this bounds the cache's bytes too.
      maxSize: 64 * 1024 * 1024,
      sizeOf: (token) => token.length + 64,
      ttlMs: Math.max(options.cacheTtlSec, 1) * 1000,
      // An entry must end exactly at `exp`, by the injectable clock.
      now,
      ...(options.cacheCounters === undefined ? {} : { counters: options.cacheCounters }),
    });
  const caching = options.cacheTtlSec > 0;
  const context: TokenCheck = { options, now, cache: caching ? cache : undefined };
  return {
    cached(token) {
      return caching ? cache.get(token) : undefined;
    },
    verify: (token) => verifyToken(context, token),
    evictSubject: (subject) => cache.evictSubject(subject),
    cacheEntries: () => cache.size,
    verified: cache,
  };
}

/** What a token's check reads, fixed per verifier. */
interface TokenCheck {
  readonly options: BearerVerifierOptions;
  readonly now: () => number;
  /** Where a verified token is kept; undefined: caching is off. */
  readonly cache: IdentityCache | undefined;
}

/** Each source whose issuer may have signed the token, until one accepts it. */
async function verifyToken(context: TokenCheck, token: string): Promise<AuthOutcome> {
  let issuer: unknown;
  try {
    issuer = decodeJwt(token).iss;
  } catch (error) {
    return deny('invalid_token', error);
  }
  let failure: Denial | GatewayError | undefined;
  for (const source of context.options.sources) {
    if (source.issuer !== undefined && issuer !== source.issuer) continue;
    try {
      const verified = await verifyBySource(context, source, token);
      if ('denied' in verified) {
        failure = pick(failure, verified);
        continue;
      }
      context.cache?.set(token, verified.identity, verified.endsAtMs);
      return verified.identity;
    } catch (error) {
      failure = pick(failure, mapVerificationError(error));
    }
  }
  if (failure instanceof GatewayError) throw failure;
  return failure ?? deny('invalid_token');
}

/** One source's verdict: the identity with its `exp`, or a denial; jose's errors thrown. */
async function verifyBySource(
  context: TokenCheck,
  source: KeySource,
  token: string,
): Promise<{ identity: Identity; endsAtMs: number } | Denial> {
  const { options } = context;
  const payload = await verifyWith(context, source, token);
  if (
    typeof payload.sub !== 'string' ||
    !SUBJECT.pattern.test(payload.sub) ||
    typeof payload.exp !== 'number'
  )
    return deny('invalid_token');
  if (source.name === options.ownTokens?.source && !(await options.ownTokens.check(payload)))
    return deny('invalid_token');
  const username = payload.preferred_username;
  const identity: Identity = {
    subject: payload.sub,
    method: 'bearer',
    source: source.name,
    username: typeof username === 'string' ? username : undefined,
    scopes: scopesOf(payload),
  };
  return { identity, endsAtMs: payload.exp * 1000 };
}

async function verifyWith(
  { options, now }: TokenCheck,
  source: KeySource,
  token: string,
): Promise<JWTPayload> {
  // jose's overloads split key and resolver; the union is the same call at run time.
  const key = source.key as Parameters<typeof jwtVerify>[1] & Uint8Array;
  const { payload } = await jwtVerify(token, key, {
    algorithms: [...source.algorithms],
    ...(source.issuer === undefined ? {} : { issuer: source.issuer }),
    ...(source.audience === undefined ? {} : { audience: source.audience }),
    requiredClaims: ['exp', 'sub'],
    clockTolerance: options.clockToleranceSec,
    currentDate: new Date(now()),
  });
  if (
    typeof payload.iat === 'number' &&
    payload.iat * 1000 > now() + options.clockToleranceSec * 1000
  ) {
    throw new errors.JWTClaimValidationFailed(
      '"iat" claim is in the future',
      payload,
      'iat',
      'check_failed',
    );
  }
  return payload;
}

/**
 * A token's scopes, from any issuer: `scope`, a space-delimited string (RFC 9068 §2.2.3,
 * RFC 8693 §4.2), or else `scp`, an array of strings (Azure AD, Okta). Anything else: none.
 */
export function scopesOf(payload: JWTPayload): readonly string[] {
  if (typeof payload.scope === 'string') return parseScopeList(payload.scope);
  return Array.isArray(payload.scp) ? uniqueScopes(payload.scp) : [];
}

/** jose's and the key sources' errors, mapped where they enter: a denial, or a 503. */
function mapVerificationError(error: unknown): Denial | GatewayError {
  // The store behind the gateway's own tokens' check could not answer: a 503 already.
  if (error instanceof GatewayError) return error;
  if (error instanceof errors.JWTExpired) return deny('token_expired', error);
  if (error instanceof KeySourceUnavailableError || error instanceof errors.JWKSTimeout) {
    return new GatewayError('credential_store_unavailable', { cause: error, retryAfterSec: 5 });
  }
  // Everything else, including jose's plain TypeErrors for key/algorithm mismatches.
  return deny('invalid_token', error);
}

/** The most telling failure wins: expired (signature was good) over unavailable over invalid. */
function pick(
  current: Denial | GatewayError | undefined,
  next: Denial | GatewayError,
): Denial | GatewayError {
  return current === undefined || rank(next) > rank(current) ? next : current;
}

function rank(failure: Denial | GatewayError): number {
  if (failure instanceof GatewayError) return 2;
  return failure.denied === 'token_expired' ? 3 : 1;
}

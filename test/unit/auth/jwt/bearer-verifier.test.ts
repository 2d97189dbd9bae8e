import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  exportSPKI,
  generateKeyPair,
  SignJWT,
  UnsecuredJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isDenial, type AuthOutcome } from '../../../../src/auth/denial.js';
import { createBearerVerifier } from '../../../../src/auth/jwt/bearer-verifier.js';
import { createRefusal } from '../../../../src/auth/refusal.js';
import {
  createKeySource,
  createResilientRemoteJwks,
  KeySourceUnavailableError,
  type KeySource,
} from '../../../../src/auth/jwt/key-sources.js';
import { GatewayError } from '../../../../src/errors/gateway-error.js';

const SECRET = 'an-hmac-secret-that-is-long-enough-1234';
const OTHER_SECRET = 'a-different-hmac-secret-also-long-enough';
const NOW_MS = Date.UTC(2030, 0, 1, 12, 0, 0);
const NOW_SEC = NOW_MS / 1000;
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

interface Claims {
  sub?: string;
  preferred_username?: string;
  iat?: number;
  exp?: number;
  nbf?: number;
  iss?: string;
  aud?: string;
  scope?: unknown;
  scp?: unknown;
}

async function hsToken(
  claims: Claims,
  secret = SECRET,
  alg = 'HS256',
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ ...claims }).setProtectedHeader({ ...header, alg }).sign(enc(secret));
}

const valid = (more: Claims = {}): Claims => ({
  sub: 'alice',
  iat: NOW_SEC - 10,
  exp: NOW_SEC + 300,
  ...more,
});

function hsSource(more: Partial<KeySource> = {}): KeySource {
  return createKeySource({
    name: 'hs',
    algorithms: ['HS256'],
    secret: SECRET,
    ...more,
  } as Parameters<typeof createKeySource>[0]);
}

function verifier(sources: KeySource[], clock: { ms: number } = { ms: NOW_MS }, ttlSec = 60) {
  return createBearerVerifier({
    sources,
    clockToleranceSec: 5,
    cacheTtlSec: ttlSec,
    cacheMaxEntries: 100,
    now: () => clock.ms,
  });
}

/** A verification that could not reach a verdict: only these are thrown. */
async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('expected a rejection');
}

const refuse = createRefusal('test');

/** The error the client gets: from a denial (a value, never thrown) or a rejection. */
async function refusal(promise: Promise<AuthOutcome>): Promise<GatewayError> {
  let outcome: AuthOutcome;
  try {
    outcome = await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).status, 'only an unavailable dependency throws').toBe(503);
    return error as GatewayError;
  }
  if (!isDenial(outcome)) throw new Error('expected a denial');
  return refuse(outcome, ['bearer']);
}

async function codeOf(promise: Promise<AuthOutcome>): Promise<[string, number]> {
  const error = await refusal(promise);
  return [error.code, error.status];
}

let es: { publicKey: CryptoKey; privateKey: CryptoKey };
let rsa: { publicKey: CryptoKey; privateKey: CryptoKey };

beforeAll(async () => {
  es = await generateKeyPair('ES256', { extractable: true });
  rsa = await generateKeyPair('RS256', { extractable: true });
});

describe('createBearerVerifier: accepted tokens', () => {
  it('returns the subject and the name of the verifying source for a valid HS256 token', async () => {
    await expect(verifier([hsSource()]).verify(await hsToken(valid()))).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });

  it('returns the subject of a valid ES256 token verified with a PEM public key', async () => {
    const source = createKeySource({
      name: 'es',
      algorithms: ['ES256'],
      publicKey: await exportSPKI(es.publicKey),
    });
    const token = await new SignJWT({ ...valid() })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(es.privateKey);
    await expect(verifier([source]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'es',
      scopes: [],
    });
  });

  it('returns the subject of a valid ES256 token verified with a JWK public key', async () => {
    const source = createKeySource({
      name: 'es-jwk',
      algorithms: ['ES256'],
      publicKey: JSON.stringify(await exportJWK(es.publicKey)),
    });
    const token = await new SignJWT({ ...valid() })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(es.privateKey);
    await expect(verifier([source]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'es-jwk',
      scopes: [],
    });
  });

  it('accepts a token expired by less than the clock tolerance', async () => {
    const token = await hsToken(valid({ iat: NOW_SEC - 100, exp: NOW_SEC - 3 }));
    await expect(verifier([hsSource()]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });

  it('accepts an iat in the future by less than the clock tolerance', async () => {
    const token = await hsToken(valid({ iat: NOW_SEC + 3 }));
    await expect(verifier([hsSource()]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });

  it('accepts a matching issuer and audience', async () => {
    const source = hsSource({ issuer: 'https://issuer.example', audience: 'gateway' });
    const token = await hsToken(valid({ iss: 'https://issuer.example', aud: 'gateway' }));
    await expect(verifier([source]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });

  it('returns the preferred_username claim as the username', async () => {
    const token = await hsToken(valid({ preferred_username: 'alice@example.com' }));
    await expect(verifier([hsSource()]).verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      username: 'alice@example.com',
      scopes: [],
    });
  });

  it('reads the scopes of a space-delimited scope claim (RFC 9068), each once', async () => {
    const token = await hsToken(valid({ scope: 'accounts:read  keys accounts:read' }));
    await expect(verifier([hsSource()]).verify(token)).resolves.toMatchObject({
      scopes: ['accounts:read', 'keys'],
    });
  });

  it('reads the scopes of an scp array of strings when there is no scope claim', async () => {
    const token = await hsToken(valid({ scp: ['accounts:read', 42, 'has space', 'keys'] }));
    await expect(verifier([hsSource()]).verify(token)).resolves.toMatchObject({
      scopes: ['accounts:read', 'keys'],
    });
  });

  it('grants no scope for a scope claim that is not a string, or an scp that is not an array', async () => {
    for (const claims of [{ scope: ['keys'] }, { scp: 'keys' }, {}]) {
      const token = await hsToken(valid(claims));
      await expect(verifier([hsSource()]).verify(token)).resolves.toMatchObject({ scopes: [] });
    }
  });

  it('tries every source and names the one whose key verified', async () => {
    const wrong = createKeySource({
      name: 'other',
      algorithms: ['HS256'],
      secret: OTHER_SECRET,
    });
    await expect(verifier([wrong, hsSource()]).verify(await hsToken(valid()))).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });
});

describe('createBearerVerifier: refused tokens', () => {
  it('returns token_expired (401) for an expired token', async () => {
    const token = await hsToken(valid({ iat: NOW_SEC - 3600, exp: NOW_SEC - 60 }));
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['token_expired', 401]);
  });

  it('returns invalid_token for a token without exp', async () => {
    const token = await hsToken({ sub: 'alice', iat: NOW_SEC });
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for a token without sub', async () => {
    const token = await hsToken({ iat: NOW_SEC, exp: NOW_SEC + 60 });
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it.each(['has space', 'x'.repeat(129), 'a/b', ''])(
    'returns invalid_token for the subject %j',
    async (sub) => {
      const token = await hsToken(valid({ sub }));
      expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
    },
  );

  it('returns invalid_token for a token signed with another secret', async () => {
    const token = await hsToken(valid(), OTHER_SECRET);
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for a token whose payload was swapped', async () => {
    const [header, , signature] = (await hsToken(valid())).split('.');
    const [, payload] = (await hsToken(valid({ sub: 'admin' }), OTHER_SECRET)).split('.');
    const forged = `${header}.${payload}.${signature}`;
    expect(await codeOf(verifier([hsSource()]).verify(forged))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for an ES256 token signed by another key', async () => {
    const other = await generateKeyPair('ES256');
    const source = createKeySource({
      name: 'es',
      algorithms: ['ES256'],
      publicKey: await exportSPKI(es.publicKey),
    });
    const token = await new SignJWT({ ...valid() })
      .setProtectedHeader({ alg: 'ES256' })
      .sign(other.privateKey);
    expect(await codeOf(verifier([source]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for an algorithm outside the allow-list, even with the right key', async () => {
    const token = await hsToken(valid(), SECRET, 'HS512');
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for alg=none', async () => {
    const token = new UnsecuredJWT({ ...valid() }).encode();
    expect(token.endsWith('.')).toBe(true);
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for HS256 signed with the RSA public key PEM (key confusion)', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const source = createKeySource({
      name: 'rsa',
      algorithms: ['RS256'],
      publicKey: pem,
    });
    const forged = await hsToken(valid(), pem);
    expect(await codeOf(verifier([source]).verify(forged))).toEqual(['invalid_token', 401]);
  });

  it('maps jose’s plain TypeError for a key/algorithm mismatch to invalid_token', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    // A source that (wrongly) allows HS256 with an RSA key: jose throws a TypeError.
    const source: KeySource = {
      ...createKeySource({
        name: 'rsa',
        algorithms: ['RS256'],
        publicKey: pem,
      }),
      algorithms: ['RS256', 'HS256'],
    };
    const error = await refusal(verifier([source]).verify(await hsToken(valid(), pem)));
    expect([error.code, error.status]).toEqual(['invalid_token', 401]);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('returns invalid_token for an iat in the future beyond the tolerance', async () => {
    const token = await hsToken(valid({ iat: NOW_SEC + 60 }));
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token for a token that is not yet valid (nbf)', async () => {
    const token = await hsToken(valid({ nbf: NOW_SEC + 60 }));
    expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token when the issuer does not match', async () => {
    const source = hsSource({ issuer: 'https://issuer.example' });
    const token = await hsToken(valid({ iss: 'https://other.example' }));
    expect(await codeOf(verifier([source]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it('returns invalid_token when a configured issuer is missing from the token', async () => {
    const source = hsSource({ issuer: 'https://issuer.example' });
    expect(await codeOf(verifier([source]).verify(await hsToken(valid())))).toEqual([
      'invalid_token',
      401,
    ]);
  });

  it('returns invalid_token when the audience does not match', async () => {
    const source = hsSource({ audience: 'gateway' });
    const token = await hsToken(valid({ aud: 'another-service' }));
    expect(await codeOf(verifier([source]).verify(token))).toEqual(['invalid_token', 401]);
  });

  it.each(['', 'abc', 'a.b.c', 'eyJhbGciOiJIUzI1NiJ9..'])(
    'returns invalid_token for the non-JWT %j',
    async (token) => {
      expect(await codeOf(verifier([hsSource()]).verify(token))).toEqual(['invalid_token', 401]);
    },
  );

  it('returns invalid_token when no source is configured', async () => {
    expect(await codeOf(verifier([]).verify(await hsToken(valid())))).toEqual([
      'invalid_token',
      401,
    ]);
  });

  it('prefers token_expired over invalid_token across sources', async () => {
    const wrong = createKeySource({
      name: 'other',
      algorithms: ['HS256'],
      secret: OTHER_SECRET,
    });
    const token = await hsToken(valid({ iat: NOW_SEC - 3600, exp: NOW_SEC - 60 }));
    expect(await codeOf(verifier([hsSource(), wrong]).verify(token))).toEqual([
      'token_expired',
      401,
    ]);
    expect(await codeOf(verifier([wrong, hsSource()]).verify(token))).toEqual([
      'token_expired',
      401,
    ]);
  });
});

describe('createBearerVerifier: cache', () => {
  it('returns nothing from cached() before a verification', async () => {
    expect(verifier([hsSource()]).cached(await hsToken(valid()))).toBeUndefined();
  });

  it('returns the identity from cached() after a successful verify', async () => {
    const v = verifier([hsSource()]);
    const token = await hsToken(valid());
    await v.verify(token);
    expect(v.cached(token)).toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
  });

  it('does not cache a refused token', async () => {
    const v = verifier([hsSource()]);
    const token = await hsToken(valid(), OTHER_SECRET);
    await expect(v.verify(token)).resolves.toMatchObject({ denied: 'invalid_token' });
    expect(v.cached(token)).toBeUndefined();
  });

  // Reads the cache at 29 s and then at 31 s in quick succession: the injected clock must be
  // consulted on every lookup (lru-cache's default ttlResolution of 1 ms reuses the previous
  // reading for a real millisecond).
  it('stops returning the identity from cached() once the token has expired', async () => {
    const clock = { ms: NOW_MS };
    const v = verifier([hsSource()], clock, 3600);
    const token = await hsToken(valid({ exp: NOW_SEC + 30 }));
    await v.verify(token);
    clock.ms = NOW_MS + 29_000;
    expect(v.cached(token)).toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
    clock.ms = NOW_MS + 31_000;
    expect(v.cached(token)).toBeUndefined();
  });

  it('stops returning the identity from cached() after the cache TTL', async () => {
    const clock = { ms: NOW_MS };
    const v = verifier([hsSource()], clock, 10);
    const token = await hsToken(valid());
    await v.verify(token);
    clock.ms = NOW_MS + 11_000;
    expect(v.cached(token)).toBeUndefined();
  });

  it('caches nothing when the TTL is 0', async () => {
    const v = verifier([hsSource()], { ms: NOW_MS }, 0);
    const token = await hsToken(valid());
    await v.verify(token);
    expect(v.cached(token)).toBeUndefined();
  });

  it('forgets every cached token of a subject on evictSubject', async () => {
    const v = verifier([hsSource()]);
    const alice = await hsToken(valid());
    const bob = await hsToken(valid({ sub: 'bob' }));
    await v.verify(alice);
    await v.verify(bob);
    v.evictSubject('alice');
    expect([v.cached(alice), v.cached(bob)]).toEqual([
      undefined,
      { subject: 'bob', method: 'bearer', source: 'hs', scopes: [] },
    ]);
  });
});

/** A JWKS endpoint on 127.0.0.1:0 that counts its requests. */
async function startJwks(
  answer: () => { status: number; body: string },
): Promise<{ url: URL; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits += 1;
    const { status, body } = answer();
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/.well-known/jwks.json`),
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function closedPortUrl(): Promise<string> {
  const jwks = await startJwks(() => ({ status: 200, body: '{}' }));
  await jwks.close();
  return jwks.url.href;
}

describe('remote JWKS key sources', () => {
  let jwk: JWK;

  beforeAll(async () => {
    jwk = { ...(await exportJWK(es.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  const esToken = (claims: Claims, kid = 'k1'): Promise<string> =>
    new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', kid }).sign(es.privateKey);

  const realNowClaims = (): Claims => {
    const now = Math.floor(Date.now() / 1000);
    return { sub: 'alice', iat: now - 10, exp: now + 7200 };
  };

  it('returns credential_store_unavailable (503) when the JWKS URL does not answer', async () => {
    const source = createKeySource(
      { name: 'jwks', algorithms: ['ES256'], jwksUrl: await closedPortUrl() },
      { fetchTimeoutMs: 500 },
    );
    const v = createBearerVerifier({
      sources: [source],
      clockToleranceSec: 5,
      cacheTtlSec: 60,
      cacheMaxEntries: 10,
    });
    const error = await rejection(v.verify(await esToken(realNowClaims())));
    expect([error.code, error.status, error.retryAfterSec]).toEqual([
      'credential_store_unavailable',
      503,
      5,
    ]);
    expect(error.cause).toBeInstanceOf(KeySourceUnavailableError);
  });

  it('returns credential_store_unavailable when the JWKS endpoint answers 500', async () => {
    const jwks = await startJwks(() => ({ status: 500, body: 'oops' }));
    try {
      const source = createKeySource(
        { name: 'jwks', algorithms: ['ES256'], jwksUrl: jwks.url.href },
        { fetchTimeoutMs: 500 },
      );
      const v = createBearerVerifier({
        sources: [source],
        clockToleranceSec: 5,
        cacheTtlSec: 60,
        cacheMaxEntries: 10,
      });
      expect(await codeOf(v.verify(await esToken(realNowClaims())))).toEqual([
        'credential_store_unavailable',
        503,
      ]);
      expect(jwks.hits()).toBe(1);
    } finally {
      await jwks.close();
    }
  });

  it('verifies a token against a live JWKS endpoint', async () => {
    const jwks = await startJwks(() => ({ status: 200, body: JSON.stringify({ keys: [jwk] }) }));
    try {
      const source: KeySource = {
        name: 'jwks',
        algorithms: ['ES256'],
        key: createResilientRemoteJwks(jwks.url, 1_000),
      };
      const v = createBearerVerifier({
        sources: [source],
        clockToleranceSec: 5,
        cacheTtlSec: 0,
        cacheMaxEntries: 10,
      });
      await expect(v.verify(await esToken(realNowClaims()))).resolves.toEqual({
        subject: 'alice',
        method: 'bearer',
        source: 'jwks',
        scopes: [],
      });
      expect(jwks.hits()).toBe(1);
    } finally {
      await jwks.close();
    }
  });

  it('returns invalid_token for a kid the JWKS does not hold', async () => {
    const jwks = await startJwks(() => ({ status: 200, body: JSON.stringify({ keys: [jwk] }) }));
    try {
      const v = createBearerVerifier({
        sources: [
          { name: 'jwks', algorithms: ['ES256'], key: createResilientRemoteJwks(jwks.url, 1_000) },
        ],
        clockToleranceSec: 5,
        cacheTtlSec: 0,
        cacheMaxEntries: 10,
      });
      expect(await codeOf(v.verify(await esToken(realNowClaims(), 'unknown-kid')))).toEqual([
        'invalid_token',
        401,
      ]);
    } finally {
      await jwks.close();
    }
  });

  it('keeps verifying with the last good key set after the JWKS endpoint goes away', async () => {
    const jwks = await startJwks(() => ({ status: 200, body: JSON.stringify({ keys: [jwk] }) }));
    const v = createBearerVerifier({
      sources: [
        { name: 'jwks', algorithms: ['ES256'], key: createResilientRemoteJwks(jwks.url, 500) },
      ],
      clockToleranceSec: 5,
      cacheTtlSec: 0,
      cacheMaxEntries: 10,
    });
    const token = await esToken(realNowClaims());
    await expect(v.verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'jwks',
      scopes: [],
    });
    await jwks.close();

    // Past jose's cacheMaxAge (10 min) the key set is stale and jose refetches: it fails.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 11 * 60_000 });
    await expect(v.verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'jwks',
      scopes: [],
    });
    // Within the backoff the endpoint is not retried, and the stale set still answers.
    await expect(v.verify(token)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'jwks',
      scopes: [],
    });
    expect(jwks.hits()).toBe(1);
  });

  // The resilient source reads the clock through `now`; `() => Date.now()` (not the
  // function reference) so it sees the faked Date.
  it('does not refetch a failing JWKS endpoint within its backoff period', async () => {
    let healthy = true;
    const jwks = await startJwks(() =>
      healthy
        ? { status: 200, body: JSON.stringify({ keys: [jwk] }) }
        : { status: 503, body: 'down' },
    );
    try {
      const v = createBearerVerifier({
        sources: [
          {
            name: 'jwks',
            algorithms: ['ES256'],
            key: createResilientRemoteJwks(jwks.url, 500, () => Date.now()),
          },
        ],
        clockToleranceSec: 5,
        cacheTtlSec: 0,
        cacheMaxEntries: 10,
      });
      const token = await esToken(realNowClaims());
      await v.verify(token);
      expect(jwks.hits()).toBe(1);
      healthy = false;
      const start = Date.now();
      vi.useFakeTimers({ toFake: ['Date'], now: start + 11 * 60_000 });
      for (let i = 0; i < 5; i += 1) {
        await expect(v.verify(token)).resolves.toEqual({
          subject: 'alice',
          method: 'bearer',
          source: 'jwks',
          scopes: [],
        });
      }
      expect(jwks.hits()).toBe(2);
      // After the first backoff (1 s) one more attempt is made.
      vi.setSystemTime(start + 11 * 60_000 + 1_500);
      await expect(v.verify(token)).resolves.toEqual({
        subject: 'alice',
        method: 'bearer',
        source: 'jwks',
        scopes: [],
      });
      expect(jwks.hits()).toBe(3);
    } finally {
      vi.useRealTimers();
      await jwks.close();
    }
  });

  it('fetches on the issuer’s own jwks timing: its cache age and its failure backoff', async () => {
    let healthy = true;
    const jwks = await startJwks(() =>
      healthy
        ? { status: 200, body: JSON.stringify({ keys: [jwk] }) }
        : { status: 503, body: 'down' },
    );
    const start = Date.now();
    // Faked before the source is made, so that every clock it reads is the faked one.
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    try {
      const v = createBearerVerifier({
        sources: [
          createKeySource({
            name: 'jwks',
            algorithms: ['ES256'],
            jwksUrl: jwks.url.href,
            jwks: {
              cacheMaxAgeMs: 60_000,
              cooldownMs: 30_000,
              timeoutMs: 500,
              failureBackoffMs: 5_000,
              maxFailureBackoffMs: 5_000,
            },
          }),
        ],
        clockToleranceSec: 5,
        cacheTtlSec: 0,
        cacheMaxEntries: 10,
        now: () => Date.now(),
      });
      const token = await esToken(realNowClaims());
      const alice = { subject: 'alice', method: 'bearer', source: 'jwks', scopes: [] };
      const hitsAt = async (elapsedMs: number): Promise<number> => {
        vi.setSystemTime(start + elapsedMs);
        await expect(v.verify(token)).resolves.toEqual(alice);
        return jwks.hits();
      };
      // Fetched again once 60 s old (the default would keep it 10 min).
      expect([await hitsAt(0), await hitsAt(59_000), await hitsAt(61_000)]).toEqual([1, 1, 2]);
      healthy = false;
      // Failed at 122 s: the last good set verifies, and the next try waits 5 s (not 1 s).
      expect([await hitsAt(122_000), await hitsAt(125_000), await hitsAt(127_500)]).toEqual([
        3, 3, 4,
      ]);
    } finally {
      vi.useRealTimers();
      await jwks.close();
    }
  });

  /** A verifier over one resilient JWKS source; every clock reads the (possibly faked) Date. */
  const jwksVerifier = (url: URL) =>
    createBearerVerifier({
      sources: [
        {
          name: 'jwks',
          algorithms: ['ES256'],
          key: createResilientRemoteJwks(url, 500, () => Date.now()),
        },
      ],
      clockToleranceSec: 5,
      cacheTtlSec: 0,
      cacheMaxEntries: 10,
      now: () => Date.now(),
    });

  // A kid the last good set lacks gets 401 while the endpoint cannot be read: as a 503, any
  // junk token with a random kid would page on-call for the whole outage. A key the issuer
  // published (and used) since the last good fetch is refused until the endpoint is back.
  it.each([
    ['past jose’s 30 s cooldown', 31_000],
    ['past jose’s 10 min cache age', 11 * 60_000],
  ])(
    'returns invalid_token, never credential_store_unavailable, for a kid missing from the last good key set while the JWKS endpoint is down (%s)',
    async (_when, elapsedMs) => {
      const rotated = await generateKeyPair('ES256', { extractable: true });
      const rotatedJwk: JWK = {
        ...(await exportJWK(rotated.publicKey)),
        kid: 'k2',
        alg: 'ES256',
        use: 'sig',
      };
      let keys: JWK[] | undefined = [jwk];
      const jwks = await startJwks(() =>
        keys === undefined
          ? { status: 503, body: 'down' }
          : { status: 200, body: JSON.stringify({ keys }) },
      );
      const identity = { subject: 'alice', method: 'bearer', source: 'jwks', scopes: [] };
      try {
        const v = jwksVerifier(jwks.url);
        const known = await esToken(realNowClaims());
        await expect(v.verify(known)).resolves.toEqual(identity);
        expect(jwks.hits()).toBe(1);

        keys = undefined;
        const start = Date.now();
        vi.useFakeTimers({ toFake: ['Date'], now: start + elapsedMs });
        const rotatedToken = await new SignJWT({ ...realNowClaims() })
          .setProtectedHeader({ alg: 'ES256', kid: 'k2' })
          .sign(rotated.privateKey);

        // jose refetches for the unknown kid; the refetch fails, the last good set lacks it.
        expect(await codeOf(v.verify(rotatedToken))).toEqual(['invalid_token', 401]);
        expect(jwks.hits()).toBe(2);

        // Within the backoff: no fetch, the same answer for any unknown kid, and the known
        // kid still verifies against the stale set.
        for (let i = 0; i < 20; i += 1) {
          expect(await codeOf(v.verify(await esToken(realNowClaims(), randomUUID())))).toEqual([
            'invalid_token',
            401,
          ]);
        }
        await expect(v.verify(known)).resolves.toEqual(identity);
        expect(jwks.hits()).toBe(2);

        // The endpoint is back with the rotated key: after the backoff it is read again.
        keys = [jwk, rotatedJwk];
        vi.setSystemTime(start + elapsedMs + 1_500);
        await expect(v.verify(rotatedToken)).resolves.toEqual(identity);
        expect(jwks.hits()).toBe(3);
        // ...and a kid missing from a set just read is a plain 401 again.
        expect(await codeOf(v.verify(await esToken(realNowClaims(), 'unknown-kid')))).toEqual([
          'invalid_token',
          401,
        ]);
      } finally {
        vi.useRealTimers();
        await jwks.close();
      }
    },
  );

  it('fetches the JWKS endpoint once for a hundred tokens with random unknown kids within the cooldown', async () => {
    const jwks = await startJwks(() => ({ status: 200, body: JSON.stringify({ keys: [jwk] }) }));
    try {
      const v = jwksVerifier(jwks.url);
      await expect(v.verify(await esToken(realNowClaims()))).resolves.toEqual({
        subject: 'alice',
        method: 'bearer',
        source: 'jwks',
        scopes: [],
      });
      for (let i = 0; i < 100; i += 1) {
        expect(await codeOf(v.verify(await esToken(realNowClaims(), randomUUID())))).toEqual([
          'invalid_token',
          401,
        ]);
      }
      expect(jwks.hits()).toBe(1);
    } finally {
      await jwks.close();
    }
  });
});

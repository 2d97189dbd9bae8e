import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuthScheme } from '../../../src/auth/auth-scheme.js';
import { createAuthenticator, type Authenticator } from '../../../src/auth/authenticate.js';
import { DENIED, isDenial } from '../../../src/auth/denial.js';
import { createBasicAuthenticator } from '../../../src/auth/basic-authenticator.js';
import { createBearerVerifier } from '../../../src/auth/jwt/bearer-verifier.js';
import { createKeySource, type KeySource } from '../../../src/auth/jwt/key-sources.js';
import type { CredentialStore } from '../../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../../src/backends/memory/credential-store.js';
import { createSecretHasher, type SecretHasher } from '../../../src/credentials/secret-hasher.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';

const REALM = 'accounts-gateway';
const BASIC_CHALLENGE = 'Basic realm="accounts-gateway", charset="UTF-8"';
const BEARER_CHALLENGE = 'Bearer realm="accounts-gateway"';
const BEARER_REJECTED = 'Bearer realm="accounts-gateway", error="invalid_token"';
const BOTH: readonly AuthScheme[] = ['basic', 'bearer'];
const KEY = 'ak_aliceAAAAAAAAAAAAAAAAAAAA';
const SECRET = 'aliceSecret0123456789aliceSecret0123456789';
const JWT_SECRET = 'an-hmac-secret-that-is-long-enough-1234';
const hasher = createSecretHasher(4);
/** A Basic header for `pair` as written, colon and all (malformed pairs included). */
const basicPair = (pair: string): string => `Basic ${Buffer.from(pair).toString('base64')}`;

let store: CredentialStore;
let dummyHash: string;

beforeAll(async () => {
  dummyHash = await hasher.hash(randomBytes(32).toString('base64'));
  store = createMemoryStore({
    keys: [
      {
        key: KEY,
        subject: 'alice',
        secretHash: await hasher.hash(SECRET),
        label: '',
        status: 'active',
        createdAt: '2030-01-01T00:00:00.000Z',
        scopes: [],
      },
    ],
  });
});

const hsSource = (): KeySource =>
  createKeySource({ name: 'hs', algorithms: ['HS256'], secret: JWT_SECRET });

function setup(
  options: {
    store?: CredentialStore;
    sources?: KeySource[];
    queue?: number;
    hasher?: SecretHasher;
  } = {},
) {
  const basic = createBasicAuthenticator({
    store: options.store ?? store,
    hasher: options.hasher ?? hasher,
    dummyHash,
    cacheTtlSec: 60,
    cacheMaxEntries: 100,
    maxConcurrentHashes: 1,
    maxQueuedHashes: options.queue ?? 16,
  });
  const bearer = createBearerVerifier({
    sources: options.sources ?? [hsSource()],
    clockToleranceSec: 5,
    cacheTtlSec: 60,
    cacheMaxEntries: 100,
  });
  return createAuthenticator({ realm: REALM, basic, bearer, maxTokenBytes: 8192 });
}

const token = (claims: { sub?: string; exp?: number; iat?: number }, secret = JWT_SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));

const nowSec = (): number => Math.floor(Date.now() / 1000);

interface Answer {
  code: string;
  status: number;
  challenges: readonly string[] | undefined;
}

/**
 * What the client is answered when authentication does not yield an identity: a denial
 * comes back as a value (never thrown) and is turned into its error by `refuse`; only an
 * unavailable dependency rejects.
 */
async function answer(
  auth: Authenticator,
  header: string | undefined,
  schemes: readonly AuthScheme[],
): Promise<Answer> {
  let error: GatewayError;
  try {
    const outcome = await auth.authenticate(header, schemes);
    if (!isDenial(outcome)) throw new Error('expected authentication to fail');
    error = auth.refuse(outcome, schemes);
    expect(error.status, 'a denial is a 4xx').toBeLessThan(500);
  } catch (thrown) {
    expect(thrown).toBeInstanceOf(GatewayError);
    error = thrown as GatewayError;
    expect(error.status, 'only an unavailable dependency throws').toBeGreaterThanOrEqual(500);
  }
  return { code: error.code, status: error.status, challenges: error.challenges };
}

describe('createAuthenticator: Basic', () => {
  it('returns the identity for a right key and secret', async () => {
    const auth = setup();
    await expect(auth.authenticate(basicPair(`${KEY}:${SECRET}`), BOTH)).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
  });

  it('answers a repeated right pair synchronously from the cache', async () => {
    const auth = setup();
    const header = basicPair(`${KEY}:${SECRET}`);
    await auth.authenticate(header, BOTH);
    const second = auth.authenticate(header, BOTH);
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toEqual({ subject: 'alice', method: 'basic', key: KEY, scopes: [] });
  });

  it('returns the malformed_authorization denial synchronously for undecodable Basic', async () => {
    const auth = setup();
    const outcome = auth.authenticate('Basic QWxh!!ZGRpbjpvcGVuIHNlc2FtZQ==', BOTH);
    expect(outcome).toBe(DENIED.malformed_authorization);
    expect(await answer(auth, 'Basic QWxh!!ZGRpbjpvcGVuIHNlc2FtZQ==', BOTH)).toEqual({
      code: 'malformed_authorization',
      status: 400,
      challenges: undefined,
    });
  });

  it.each([
    ['no colon', basicPair('no-colon-here')],
    ['a control character', basicPair(`${KEY}:sec\nret`)],
    ['invalid UTF-8', `Basic ${Buffer.from([0x61, 0x3a, 0xfe]).toString('base64')}`],
  ])('returns 400 malformed_authorization for Basic with %s', async (_label, header) => {
    expect(await answer(setup(), header, BOTH)).toEqual({
      code: 'malformed_authorization',
      status: 400,
      challenges: undefined,
    });
  });

  it('returns 401 invalid_credentials with both challenges when the secret is wrong', async () => {
    expect(await answer(setup(), basicPair(`${KEY}:wrong`), BOTH)).toEqual({
      code: 'invalid_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_CHALLENGE],
    });
  });

  it('returns the same 401 for an unknown key as for a wrong secret', async () => {
    const unknown = await answer(
      setup(),
      basicPair(`ak_nobodyNNNNNNNNNNNNNNNNNNN:${SECRET}`),
      BOTH,
    );
    const wrong = await answer(setup(), basicPair(`${KEY}:wrong`), BOTH);
    expect(unknown).toEqual(wrong);
  });

  it('returns 401 invalid_credentials for an empty secret', async () => {
    expect(await answer(setup(), basicPair(`${KEY}:`), BOTH)).toEqual({
      code: 'invalid_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_CHALLENGE],
    });
  });

  it('returns 401 missing_credentials with only the Bearer challenge on a bearer-only route', async () => {
    expect(await answer(setup(), basicPair(`${KEY}:${SECRET}`), ['bearer'])).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BEARER_CHALLENGE],
    });
  });

  it('returns 503 credential_store_unavailable, not 401, when the store cannot answer', async () => {
    const failing: CredentialStore = {
      ...store,
      getKey: () => Promise.reject(new GatewayError('credential_store_unavailable')),
    };
    expect(await answer(setup({ store: failing }), basicPair(`${KEY}:${SECRET}`), BOTH)).toEqual({
      code: 'credential_store_unavailable',
      status: 503,
      challenges: undefined,
    });
  });

  it('returns 503 overloaded when the bcrypt queue is full', async () => {
    // The real hasher, held at its first compare so that compare keeps the only slot.
    let started = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: SecretHasher = {
      hash: (secret) => hasher.hash(secret),
      async verify(secret, hash) {
        started = true;
        await gate;
        return hasher.verify(secret, hash);
      },
    };
    const auth = setup({ queue: 0, hasher: held });
    const first = auth.authenticate(basicPair(`${KEY}:guess-1`), BOTH);
    while (!started) await new Promise((resolve) => setImmediate(resolve));
    const refused = await answer(auth, basicPair(`${KEY}:guess-2`), BOTH);
    expect(refused).toEqual({ code: 'overloaded', status: 503, challenges: undefined });
    release();
    await expect(first).resolves.toBe(DENIED.invalid_credentials);
  });
});

describe('createAuthenticator: missing or unsupported credentials', () => {
  it('returns 401 missing_credentials with both challenges when there is no header', async () => {
    expect(await answer(setup(), undefined, BOTH)).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_CHALLENGE],
    });
  });

  it('returns 401 missing_credentials for an empty header', async () => {
    expect(await answer(setup(), '', BOTH)).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_CHALLENGE],
    });
  });

  it('returns 401 missing_credentials for an unsupported scheme', async () => {
    expect(await answer(setup(), 'Digest username="alice"', BOTH)).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_CHALLENGE],
    });
  });

  it('offers only the route’s schemes in the challenges', async () => {
    expect(await answer(setup(), undefined, ['basic'])).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE],
    });
  });

  it('uses the configured realm', async () => {
    const basic = createBasicAuthenticator({
      store,
      hasher,
      dummyHash,
      cacheTtlSec: 0,
      cacheMaxEntries: 1,
      maxConcurrentHashes: 1,
      maxQueuedHashes: 1,
    });
    const bearer = createBearerVerifier({
      sources: [],
      clockToleranceSec: 0,
      cacheTtlSec: 0,
      cacheMaxEntries: 1,
    });
    const auth = createAuthenticator({ realm: 'other realm', basic, bearer, maxTokenBytes: 8192 });
    expect((await answer(auth, undefined, BOTH)).challenges).toEqual([
      'Basic realm="other realm", charset="UTF-8"',
      'Bearer realm="other realm"',
    ]);
  });
});

describe('createAuthenticator: Bearer', () => {
  it('returns the identity for a valid token and then answers from the cache', async () => {
    const auth = setup();
    const jwt = await token({ sub: 'alice', iat: nowSec(), exp: nowSec() + 300 });
    await expect(auth.authenticate(`Bearer ${jwt}`, BOTH)).resolves.toEqual({
      subject: 'alice',
      method: 'bearer',
      source: 'hs',
      scopes: [],
    });
    const second = auth.authenticate(`Bearer ${jwt}`, BOTH);
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toEqual({ subject: 'alice', method: 'bearer', source: 'hs', scopes: [] });
  });

  it('returns 401 invalid_token with error="invalid_token" for a bad signature', async () => {
    const jwt = await token(
      { sub: 'alice', iat: nowSec(), exp: nowSec() + 300 },
      'not-the-configured-secret-0123456789ab',
    );
    expect(await answer(setup(), `Bearer ${jwt}`, BOTH)).toEqual({
      code: 'invalid_token',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_REJECTED],
    });
  });

  it('returns 401 token_expired with error="invalid_token" for an expired token', async () => {
    const jwt = await token({ sub: 'alice', iat: nowSec() - 600, exp: nowSec() - 60 });
    expect(await answer(setup(), `Bearer ${jwt}`, BOTH)).toEqual({
      code: 'token_expired',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_REJECTED],
    });
  });

  it('returns 401 invalid_token for a token that is not b64token syntax', async () => {
    expect(await answer(setup(), 'Bearer a,b', BOTH)).toEqual({
      code: 'invalid_token',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_REJECTED],
    });
  });

  it('returns 401 invalid_token for a token longer than maxTokenBytes', async () => {
    expect(await answer(setup(), `Bearer ${'a'.repeat(8193)}`, BOTH)).toEqual({
      code: 'invalid_token',
      status: 401,
      challenges: [BASIC_CHALLENGE, BEARER_REJECTED],
    });
  });

  it('returns 401 missing_credentials with only the Basic challenge on a basic-only route', async () => {
    const jwt = await token({ sub: 'alice', iat: nowSec(), exp: nowSec() + 300 });
    expect(await answer(setup(), `Bearer ${jwt}`, ['basic'])).toEqual({
      code: 'missing_credentials',
      status: 401,
      challenges: [BASIC_CHALLENGE],
    });
  });

  it('returns 503 credential_store_unavailable, not 401, when the JWKS cannot be fetched', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const source = createKeySource(
      {
        name: 'remote',
        algorithms: ['ES256'],
        jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
      },
      { fetchTimeoutMs: 500 },
    );
    const jwt = [
      Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k1' })).toString('base64url'),
      Buffer.from(JSON.stringify({ sub: 'alice', exp: nowSec() + 300 })).toString('base64url'),
      'c2lnbmF0dXJl',
    ].join('.');
    expect(await answer(setup({ sources: [source] }), `Bearer ${jwt}`, BOTH)).toEqual({
      code: 'credential_store_unavailable',
      status: 503,
      challenges: undefined,
    });
  });
});

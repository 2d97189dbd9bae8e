import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BASIC_CHALLENGE,
  BEARER_CHALLENGE,
  BEARER_REJECTED,
  expectGatewayError,
  GENERATED_REQUEST_ID,
} from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { rawRequest, type RawAnswer } from '../support/raw-request.js';
import { freePort } from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('authbearer');
const SECRET = 'bearer-test-secret-0123456789abcdefghijklmnop';
const OTHER_SECRET = 'another-secret-0123456789abcdefghijklmnopqrs';
const MAX_TOKEN_BYTES = 600;

let upstream: EchoUpstream;
let gateway: GatewayProcess;
let jwksUrl: string;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  // A port nothing listens on: the JWKS issuer's keys can never be fetched.
  jwksUrl = `http://127.0.0.1:${await freePort()}/.well-known/jwks.json`;
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      config: {
        auth: {
          bearer: {
            maxTokenBytes: MAX_TOKEN_BYTES,
            issuers: [
              {
                name: 'test',
                algorithms: ['HS256'],
                secret: SECRET,
                issuer: 'test-issuer',
                audience: 'accounts',
              },
              {
                name: 'remote',
                algorithms: ['RS256'],
                jwksUrl,
                issuer: 'jwks-issuer',
                audience: 'accounts',
              },
            ],
          },
        },
        logging: { level: 'info' },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

const now = (): number => Math.floor(Date.now() / 1000);

interface TokenOptions {
  claims?: JWTPayload;
  alg?: string;
  secret?: string;
  issuer?: string | undefined;
  audience?: string | undefined;
  subject?: string | undefined;
  expiresAt?: number | undefined;
  issuedAt?: number;
}

/** A token the test issuer would sign, with any one thing changed. */
function sign(options: TokenOptions = {}): Promise<string> {
  const pick = <T>(key: keyof TokenOptions, fallback: T): T | undefined =>
    key in options ? (options[key] as T | undefined) : fallback;
  const issuer = pick('issuer', 'test-issuer');
  const audience = pick('audience', 'accounts');
  const subject = pick('subject', 'carol');
  const expiresAt = pick('expiresAt', now() + 300);
  let jwt = new SignJWT(options.claims ?? {})
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setIssuedAt(options.issuedAt ?? now());
  if (issuer !== undefined) jwt = jwt.setIssuer(issuer);
  if (audience !== undefined) jwt = jwt.setAudience(audience);
  if (subject !== undefined) jwt = jwt.setSubject(subject);
  if (expiresAt !== undefined) jwt = jwt.setExpirationTime(expiresAt);
  return jwt.sign(new TextEncoder().encode(options.secret ?? SECRET));
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function bearerGet(token: string): Promise<RawAnswer> {
  return rawRequest(
    gateway.port,
    `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
  );
}

describe('Bearer tokens that verify', () => {
  it('forwards a valid token as X-Auth-Method bearer with its sub and no X-Auth-Key', async () => {
    const mark = upstreamMark(upstream);
    const res = await bearerGet(await sign());
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
    const seen = mark.since();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe('/accounts');
    expect(seen[0]?.headers).toMatchObject({
      'x-auth-subject': 'carol',
      'x-auth-method': 'bearer',
      'x-request-id': res.headers['x-request-id'],
    });
    expect(seen[0]?.headers['x-auth-key']).toBeUndefined();
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });

  it('accepts the scheme spelled bearer or BEARER', async () => {
    const token = await sign({ subject: 'dave' });
    for (const scheme of ['bearer', 'BEARER']) {
      const mark = upstreamMark(upstream);
      const res = await rawRequest(
        gateway.port,
        `GET /account HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: ${scheme} ${token}\r\nConnection: close\r\n\r\n`,
      );
      expect(res.status).toBe(200);
      expect(mark.since()[0]?.headers['x-auth-subject']).toBe('dave');
    }
  });
});

describe('Bearer tokens that are refused', () => {
  it('answers 401 token_expired with an invalid_token Bearer challenge for an expired token', async () => {
    const mark = upstreamMark(upstream);
    const res = await bearerGet(await sign({ expiresAt: now() - 120 }));
    expectGatewayError(res, 'token_expired');
    expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_REJECTED]);
    expect(mark.since()).toEqual([]);
  });

  const refused: [string, () => Promise<string>][] = [
    ['a token without exp', () => sign({ expiresAt: undefined })],
    ['a token without sub', () => sign({ subject: undefined })],
    ['a token from another issuer', () => sign({ issuer: 'other-issuer' })],
    ['a token without an issuer', () => sign({ issuer: undefined })],
    ['a token for another audience', () => sign({ audience: 'billing' })],
    ['a token without an audience', () => sign({ audience: undefined })],
    ['a token signed with another secret', () => sign({ secret: OTHER_SECRET })],
    ['a token signed with HS512, which the issuer does not allow', () => sign({ alg: 'HS512' })],
    [
      'a token issued in the future',
      () => sign({ issuedAt: now() + 3600, expiresAt: now() + 7200 }),
    ],
    [
      'an unsigned token (alg none)',
      () =>
        Promise.resolve(
          `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({
            iss: 'test-issuer',
            aud: 'accounts',
            sub: 'carol',
            exp: now() + 300,
          })}.`,
        ),
    ],
    [
      'a token whose signature was cut off',
      async () => (await sign()).split('.').slice(0, 2).join('.') + '.',
    ],
    ['a string that is not a JWT', () => Promise.resolve('not-a-jwt')],
    [
      `a validly signed token longer than maxTokenBytes (${MAX_TOKEN_BYTES})`,
      () => sign({ claims: { pad: 'p'.repeat(MAX_TOKEN_BYTES) } }),
    ],
    ['a token with characters outside b64token', () => Promise.resolve('abc.d!f.ghi')],
  ];

  it.each(refused)(
    'answers 401 invalid_token with an invalid_token Bearer challenge for %s',
    async (_what, makeToken) => {
      const mark = upstreamMark(upstream);
      const res = await bearerGet(await makeToken());
      expectGatewayError(res, 'invalid_token');
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_REJECTED]);
      expect(mark.since()).toEqual([]);
    },
  );

  it('answers 401 missing_credentials with a plain Bearer challenge for an empty Bearer header', async () => {
    const res = await rawRequest(
      gateway.port,
      'GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer\r\nConnection: close\r\n\r\n',
    );
    expectGatewayError(res, 'missing_credentials');
    expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_CHALLENGE]);
  });
});

describe('a JWKS issuer whose key set cannot be fetched', () => {
  async function remoteToken(): Promise<string> {
    const { privateKey } = await generateKeyPair('RS256');
    return new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'remote-1', typ: 'JWT' })
      .setIssuer('jwks-issuer')
      .setAudience('accounts')
      .setSubject('erin')
      .setIssuedAt()
      .setExpirationTime(now() + 300)
      .sign(privateKey);
  }

  it('answers 503 credential_store_unavailable, never 401, and forwards nothing', async () => {
    const token = await remoteToken();
    // The second attempt falls inside the gateway's retry backoff: still unavailable.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const mark = upstreamMark(upstream);
      const res = await bearerGet(token);
      expectGatewayError(res, 'credential_store_unavailable');
      expect(res.headers['www-authenticate']).toBeUndefined();
      // A key source that cannot be reached: src/auth/jwt/bearer-verifier.ts asks for 5 s.
      expect(res.headers['retry-after']).toBe('5');
      expect(mark.since()).toEqual([]);
    }
  });

  it('still verifies tokens of the HMAC issuer while the JWKS issuer is unreachable', async () => {
    const res = await bearerGet(await sign({ subject: 'frank' }));
    expect(res.status).toBe(200);
  });
});

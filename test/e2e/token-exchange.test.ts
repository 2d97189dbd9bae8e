import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOGIN_MESSAGES } from '../../src/openapi/api-schemas.js';
import { bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BEARER_CHALLENGE,
  BASIC_CHALLENGE,
  BEARER_REJECTED,
  expectGatewayError,
  expectLockRetryAfter,
  GENERATED_REQUEST_ID,
  UUID_V4,
} from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { generateSigningKey, type SigningKey } from '../support/generate-signing-key.js';
import { comparableHeaders, withoutRequestId, type HttpAnswer } from '../support/http-answer.js';
import { rawRequest } from '../support/raw-request.js';
import { putUser, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// The password-to-JWT exchange (issue 3, part 2) through a gateway process on the Redis
// store: POST /auth/token, the tokens it issues on the Bearer path, the lockout,
// and the JWKS. The lockout counts per client address too, so each test sends from its
// own loopback address (127.0.0.x) and never trips another test's limit.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('tokenx');
const LIFETIME_SEC = 600;
const MAX_BODY_BYTES = 300;
const ISSUER = 'accounts-gateway';
const AUDIENCE = 'accounts';
const ALICE = { username: 'alice', subject: 'subject-alice', password: 'alice-password-1' };
const VICTIM = { username: 'victim', subject: 'subject-victim', password: 'victim-password-1' };
const MALLORY = { username: 'mallory', subject: 'subject-mallory', password: 'mallory-pass-1' };
const BURST = { username: 'burst', subject: 'subject-burst', password: 'burst-password-1' };
const MAX_FAILURES = 3;
const LOCK_SEC = 60;

let upstream: EchoUpstream;
let gateway: GatewayProcess;
let signing: SigningKey;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  signing = await generateSigningKey();
  await Promise.all([ALICE, VICTIM, MALLORY, BURST].map((user) => putUser(redisUrl, prefix, user)));
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      signingKeyPem: signing.pem,
      config: {
        server: { maxBodyBytes: MAX_BODY_BYTES },
        tokens: { lifetimeSec: LIFETIME_SEC },
        // Every counter at 3, and every lock 60 s: exact Retry-After values.
        lockout: {
          initialLockSec: LOCK_SEC,
          token: {
            address: { threshold: MAX_FAILURES, maxLockSec: LOCK_SEC },
            usernameAddress: { threshold: MAX_FAILURES, maxLockSec: LOCK_SEC },
            username: { threshold: MAX_FAILURES, maxLockSec: LOCK_SEC },
          },
        },
        logging: { level: 'info', requests: false },
      },
    }),
  );
  await untilSubscribers(redisUrl, prefix, 1);
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

function exchange(body: string, from: string, headers: Record<string, string> = JSON_TYPE) {
  return send(gateway.url, '/auth/token', { method: 'POST', headers, body, from });
}

const login = (username: string, password: string, from: string): Promise<HttpAnswer> =>
  exchange(JSON.stringify({ username, password }), from);

const nowSec = (): number => Math.floor(Date.now() / 1000);

/** The head of a login with `Expect: 100-continue`, for a body of `bodyBytes` bytes. */
const continueHead = (bodyBytes: number): string =>
  'POST /auth/token HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n' +
  `Content-Length: ${bodyBytes}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;

describe('POST /auth/token with the right password', () => {
  it('answers 200 with a Bearer token for tokens.lifetimeSec, not cacheable', async () => {
    const before = nowSec();
    const res = await login(ALICE.username, ALICE.password, '127.0.0.10');
    const after = nowSec();
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
    expect(res.json).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: null },
      data: [
        {
          access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) as unknown,
          token_type: 'Bearer',
          expires_in: LIFETIME_SEC,
          expires_at: expect.stringMatching(
            /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/,
          ) as unknown,
        },
      ],
    });
    const [issued] = (res.json as { data: { access_token: string; expires_at: string }[] }).data;
    const token = issued?.access_token ?? '';
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'ES256', kid: signing.kid, typ: 'at+jwt' });
    const claims = decodeJwt(token);
    expect(claims).toEqual({
      iss: ISSUER,
      aud: AUDIENCE,
      sub: ALICE.subject,
      preferred_username: ALICE.username,
      iat: expect.any(Number) as unknown,
      exp: expect.any(Number) as unknown,
      // randomUUID() in src/tokens/token-signer.ts.
      jti: expect.stringMatching(UUID_V4) as unknown,
    });
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.iat).toBeLessThanOrEqual(after);
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(LIFETIME_SEC);
    expect(issued?.expires_at).toBe(new Date((claims.exp ?? 0) * 1000).toISOString());
    // Signed with the configured key: the test, holding its public half, verifies it too.
    const jwks = (await send(gateway.url, '/.well-known/jwks.json')).json as Parameters<
      typeof createLocalJWKSet
    >[0];
    await expect(
      jwtVerify(token, createLocalJWKSet(jwks), { issuer: ISSUER, audience: AUDIENCE }),
    ).resolves.toEqual(
      expect.objectContaining({
        payload: claims,
        protectedHeader: { alg: 'ES256', kid: signing.kid, typ: 'at+jwt' },
      }),
    );
  });

  it('issues a token the Bearer path accepts for /accounts', async () => {
    const res = await login(ALICE.username, ALICE.password, '127.0.0.11');
    const token = (res.json as { data: { access_token: string }[] }).data[0]?.access_token ?? '';
    const mark = upstreamMark(upstream);
    const accounts = await send(gateway.url, '/accounts', {
      headers: { authorization: bearerHeader(token) },
    });
    expect(accounts.status).toBe(200);
    expect(accounts.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
    const seen = mark.since();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers).toMatchObject({
      'x-auth-method': 'bearer',
      'x-auth-subject': ALICE.subject,
      'x-request-id': accounts.headers['x-request-id'],
    });
    expect(seen[0]?.headers['x-auth-key']).toBeUndefined();
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });

  it('gives every exchange its own token (a new jti)', async () => {
    const one = await login(ALICE.username, ALICE.password, '127.0.0.12');
    const two = await login(ALICE.username, ALICE.password, '127.0.0.12');
    const jti = (res: HttpAnswer): unknown =>
      decodeJwt((res.json as { data: { access_token: string }[] }).data[0]?.access_token ?? '').jti;
    expect(jti(one)).not.toBe(jti(two));
  });
});

describe('POST /auth/token refusals', () => {
  it('answers a wrong password and an unknown username with identical 401 bodies', async () => {
    const wrong = await login(ALICE.username, 'not-the-password', '127.0.0.20');
    const unknown = await login('nobody-by-this-name', 'not-the-password', '127.0.0.21');
    expectGatewayError(wrong, 'invalid_credentials');
    expectGatewayError(unknown, 'invalid_credentials');
    // RFC 9110 §15.5.2: a 401 carries a challenge, here too.
    expect([wrong.headers['www-authenticate'], unknown.headers['www-authenticate']]).toEqual([
      BEARER_CHALLENGE,
      BEARER_CHALLENGE,
    ]);
    expect(withoutRequestId(unknown.json)).toEqual(withoutRequestId(wrong.json));
    expect(comparableHeaders(unknown.headers)).toEqual(comparableHeaders(wrong.headers));
  });

  it('answers 400 bad_request naming the missing or wrong field, in fixed words', async () => {
    const { body, usernameMissing, username, passwordMissing, password } = LOGIN_MESSAGES;
    const cases: [string, string][] = [
      ['{}', usernameMissing],
      [JSON.stringify({ username: ALICE.username }), passwordMissing],
      [JSON.stringify({ password: ALICE.password }), usernameMissing],
      [JSON.stringify({ username: ALICE.username, password: '' }), password],
      [JSON.stringify({ username: 42, password: ALICE.password }), username],
      [JSON.stringify({ username: ALICE.username, password: ['x'] }), password],
      [JSON.stringify({ username: 'has space', password: ALICE.password }), username],
      [JSON.stringify({ username: 'u'.repeat(129), password: ALICE.password }), username],
      [JSON.stringify([ALICE.username, ALICE.password]), body],
      ['null', body],
      ['"alice"', body],
      ['{"username":"alice","password":', body],
      ['username=alice&password=x', body],
    ];
    for (const [sent, message] of cases) {
      expectGatewayError(await exchange(sent, '127.0.0.22'), 'bad_request', { message });
    }
    // No body at all.
    const empty = await send(gateway.url, '/auth/token', {
      method: 'POST',
      headers: { ...JSON_TYPE, 'content-length': '0' },
      from: '127.0.0.22',
    });
    expectGatewayError(empty, 'bad_request', { message: body });
    // None of these counted as a failed login: the right password still passes from there.
    expect((await login(ALICE.username, ALICE.password, '127.0.0.22')).status).toBe(200);
  });

  it('answers 415 unsupported_media_type for a body that is not application/json', async () => {
    const body = JSON.stringify({ username: ALICE.username, password: ALICE.password });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
      const res = await exchange(body, '127.0.0.23', { 'content-type': type });
      expectGatewayError(res, 'unsupported_media_type');
    }
    expectGatewayError(await exchange(body, '127.0.0.23', {}), 'unsupported_media_type');
  });

  it('answers 413 payload_too_large for a body over server.maxBodyBytes', async () => {
    const body = JSON.stringify({ username: ALICE.username, password: 'x'.repeat(MAX_BODY_BYTES) });
    expectGatewayError(await exchange(body, '127.0.0.24'), 'payload_too_large');
    const chunked = await rawRequest(
      gateway.port,
      'POST /auth/token HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n' +
        'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n' +
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expectGatewayError(chunked, 'payload_too_large');
  });

  it('answers 405 with Allow: POST for another method', async () => {
    const res = await send(gateway.url, '/auth/token', { from: '127.0.0.25' });
    expectGatewayError(res, 'method_not_allowed');
    expect(res.headers.allow).toBe('POST');
  });
});

describe('Expect: 100-continue on POST /auth/token', () => {
  it('answers 415 to a wrong content type and never sends 100 Continue', async () => {
    const res = await rawRequest(
      gateway.port,
      'POST /auth/token HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: text/plain\r\n' +
        'Content-Length: 50\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
    );
    expectGatewayError(res, 'unsupported_media_type');
    expect(res.raw).not.toContain('100 Continue');
    expect(res.raw).toMatch(/^HTTP\/1\.1 415 /);
  });

  it('answers 413 to a declared length over the limit and never sends 100 Continue', async () => {
    const res = await rawRequest(
      gateway.port,
      'POST /auth/token HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${MAX_BODY_BYTES + 1}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
    );
    expectGatewayError(res, 'payload_too_large');
    expect(res.raw).not.toContain('100 Continue');
  });

  it('sends 100 Continue before reading the body of an acceptable request, then the token', async () => {
    const body = JSON.stringify({ username: ALICE.username, password: ALICE.password });
    const res = await rawRequest(gateway.port, continueHead(Buffer.byteLength(body)), {
      continueBody: body,
      from: '127.0.0.26',
    });
    // The body goes only after a 100 Continue: nothing but that interim response came
    // before it, and the token (which needs the body) after it.
    expect(res.raw).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      result: 'success',
      data: [{ token_type: 'Bearer', expires_in: LIFETIME_SEC }],
    });
  });
  it('answers 429 at once to a client address already refused, and never sends 100 Continue', async () => {
    const from = '127.0.0.27';
    for (const username of ['sprayed-1', 'sprayed-2', 'sprayed-3'])
      expect((await login(username, 'wrong-password', from)).status).toBe(401);
    const body = JSON.stringify({ username: ALICE.username, password: ALICE.password });
    // The body would go only after a 100 Continue.
    const refused = await rawRequest(gateway.port, continueHead(Buffer.byteLength(body)), {
      continueBody: body,
      from,
    });
    expect(refused.raw).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused.raw).not.toContain('100 Continue');
    expectGatewayError(refused, 'rate_limited');
    expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
  });
});

describe('lockout (every counter at 3 failures, 60 s locks)', () => {
  it('refuses a username with 429 and Retry-After after repeated failures, from any address', async () => {
    for (const from of ['127.0.0.30', '127.0.0.31', '127.0.0.32']) {
      expectGatewayError(
        await login(VICTIM.username, 'wrong-password', from),
        'invalid_credentials',
      );
    }
    // Even the right password, from an address that never failed, is refused now.
    const refused = await login(VICTIM.username, VICTIM.password, '127.0.0.33');
    expectGatewayError(refused, 'rate_limited');
    expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
    // Another user from the same address is not affected.
    expect((await login(ALICE.username, ALICE.password, '127.0.0.33')).status).toBe(200);
  });

  it('refuses an unknown username exactly the same way', async () => {
    const answers: HttpAnswer[] = [];
    const known: HttpAnswer[] = [];
    const addresses = ['127.0.0.40', '127.0.0.41', '127.0.0.42', '127.0.0.43'];
    const knownAddresses = ['127.0.0.44', '127.0.0.45', '127.0.0.46', '127.0.0.47'];
    for (const [i, from] of addresses.entries()) {
      answers.push(await login('ghost-never-added', 'wrong-password', from));
      known.push(await login(MALLORY.username, 'wrong-password', knownAddresses[i] ?? ''));
    }
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 429]);
    expect(known.map((a) => a.status)).toEqual([401, 401, 401, 429]);
    for (const [i, answer] of answers.entries()) {
      const twin = known[i];
      expect(withoutRequestId(answer.json)).toEqual(withoutRequestId(twin?.json));
      expect(Object.keys(answer.headers).sort()).toEqual(Object.keys(twin?.headers ?? {}).sort());
    }
    for (const refused of [answers[3], known[3]] as HttpAnswer[]) {
      expectGatewayError(refused, 'rate_limited');
      expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
    }
  });

  it('lets only the threshold of a parallel burst of wrong passwords through, and answers the rest 429', async () => {
    /** The answers, lowest status first. */
    const burstOf = async (username: string, firstHost: number) => {
      // Each from its own address, so only the username's count can refuse them.
      const answers = await Promise.all(
        Array.from({ length: MAX_FAILURES + 5 }, (_, i) =>
          login(username, `wrong-password-${i}`, `127.0.0.${firstHost + i}`),
        ),
      );
      return { answers: answers.sort((a, b) => a.status - b.status) };
    };
    const knownBurst = await burstOf(BURST.username, 60);
    const unknownBurst = await burstOf('burst-ghost-never-added', 70);
    const [known, unknown] = [knownBurst.answers, unknownBurst.answers];
    const expected = [...Array<number>(MAX_FAILURES).fill(401), ...Array<number>(5).fill(429)];
    expect(known.map((a) => a.status)).toEqual(expected);
    expect(unknown.map((a) => a.status)).toEqual(expected);
    for (const [i, answer] of known.entries()) {
      expectGatewayError(answer, i < MAX_FAILURES ? 'invalid_credentials' : 'rate_limited');
      const twin = unknown[i] as HttpAnswer;
      expect(withoutRequestId(twin.json)).toEqual(withoutRequestId(answer.json));
      expect(Object.keys(twin.headers).sort()).toEqual(Object.keys(answer.headers).sort());
      if (answer.status === 429) {
        for (const refused of [answer, twin]) {
          expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
        }
      }
    }
    // The burst spent the username's allowance: its right password is refused too.
    expectGatewayError(await login(BURST.username, BURST.password, '127.0.0.80'), 'rate_limited');
  });

  it('refuses a client address that failed for several usernames, but not other addresses', async () => {
    const from = '127.0.0.50';
    for (const username of ['spray-1', 'spray-2', ALICE.username]) {
      expect((await login(username, 'wrong-password', from)).status).toBe(401);
    }
    const refused = await login(ALICE.username, ALICE.password, from);
    expectGatewayError(refused, 'rate_limited');
    expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
    // ALICE has one failure, far below the limit: from elsewhere her password works.
    expect((await login(ALICE.username, ALICE.password, '127.0.0.51')).status).toBe(200);
  });
});

describe('tokens the gateway did not issue as they are', () => {
  async function signWith(
    key: Parameters<SignJWT['sign']>[0],
    claims: { exp: number; iat: number },
  ): Promise<string> {
    return new SignJWT({ preferred_username: ALICE.username })
      .setProtectedHeader({ alg: 'ES256', kid: signing.kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(ALICE.subject)
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.exp)
      .setJti('test-jti')
      .sign(key);
  }

  it("answers 401 token_expired to an expired token signed with the gateway's key", async () => {
    const token = await signWith(signing.privateKey, { iat: nowSec() - 1200, exp: nowSec() - 120 });
    for (const path of ['/accounts', '/keys']) {
      const res = await send(gateway.url, path, {
        headers: { authorization: bearerHeader(token) },
      });
      expectGatewayError(res, 'token_expired');
      // Two WWW-Authenticate lines: Basic, and the rejected Bearer.
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_REJECTED]);
    }
  });

  it('answers 401 invalid_token to a token signed by another key under the same kid', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const token = await signWith(other, { iat: nowSec(), exp: nowSec() + 300 });
    const mark = upstreamMark(upstream);
    for (const path of ['/accounts', '/keys']) {
      const res = await send(gateway.url, path, {
        headers: { authorization: bearerHeader(token) },
      });
      expectGatewayError(res, 'invalid_token');
      // Two WWW-Authenticate lines: Basic, and the rejected Bearer.
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_REJECTED]);
    }
    expect(mark.since()).toEqual([]);
  });

  it('accepts a token the test signs with the same key and claims (the control case)', async () => {
    const token = await signWith(signing.privateKey, { iat: nowSec(), exp: nowSec() + 300 });
    expect(
      (await send(gateway.url, '/accounts', { headers: { authorization: bearerHeader(token) } }))
        .status,
    ).toBe(200);
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('publishes exactly the public half of the signing key, under the kid tokens carry', async () => {
    const res = await send(gateway.url, '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.json).toEqual({
      keys: [
        {
          kty: 'EC',
          crv: 'P-256',
          kid: signing.kid,
          alg: 'ES256',
          use: 'sig',
          x: signing.publicJwk.x,
          y: signing.publicJwk.y,
        },
      ],
    });
    expect(res.body).not.toContain('"d"');
  });

  it('needs no credentials', async () => {
    const res = await send(gateway.url, '/.well-known/jwks.json', {
      headers: { authorization: 'Basic bm90OnZhbGlk' },
    });
    expect(res.status).toBe(200);
  });
});

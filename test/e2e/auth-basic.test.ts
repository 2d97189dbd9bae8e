import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BASIC_CHALLENGE,
  BEARER_CHALLENGE,
  expectGatewayError,
  GENERATED_REQUEST_ID,
} from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import {
  comparableHeaders,
  fromFetch,
  withoutRequestId,
  type HttpAnswer,
} from '../support/http-answer.js';
import { rawRequest, type RawAnswer } from '../support/raw-request.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('authbasic');
const KEY = 'ak_basic';
const SECRET = 'basic-secret-0123456789abcdefghijklmnopq';
const SECRET_72 = 'A'.repeat(72);
/** A self-describing id another service wrote for subject alice (docs/redis-layout.md, Key ids), and a typo of it. */
const TAGGED = 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX';
const MISTYPED = TAGGED.replace('7Fq', '7Gq');

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  const redisUrl = inject('redisUrl');
  await Promise.all([
    seedKey(redisUrl, prefix, { key: KEY, secret: SECRET, subject: 'bob' }),
    // RFC 7617 §2 and §2.1 examples, stored as real pairs.
    seedKey(redisUrl, prefix, { key: 'Aladdin', secret: 'open sesame', subject: 'aladdin' }),
    seedKey(redisUrl, prefix, { key: 'test', secret: '123£', subject: 'tester' }),
    seedKey(redisUrl, prefix, { key: 'ak_long', secret: SECRET_72, subject: 'longo' }),
    seedKey(redisUrl, prefix, { key: 'ak_colon', secret: 'se:cr:et', subject: 'colin' }),
    seedKey(redisUrl, prefix, { key: TAGGED, secret: SECRET, subject: 'alice' }),
    // Stored too, so that only the checksum can refuse it.
    seedKey(redisUrl, prefix, { key: MISTYPED, secret: SECRET, subject: 'alice' }),
    seedKey(redisUrl, prefix, {
      key: 'ak_revoked',
      secret: SECRET,
      subject: 'bob',
      status: 'revoked',
    }),
  ]);
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      config: { logging: { level: 'info' } },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

async function get(authorization?: string): Promise<HttpAnswer> {
  const res = await fetch(`${gateway.url}/accounts`, {
    headers: authorization === undefined ? {} : { authorization },
  });
  return fromFetch(res);
}

/** Raw, so repeated WWW-Authenticate lines stay apart. */
function rawGet(authorizationLines: string[]): Promise<RawAnswer> {
  const lines = authorizationLines.map((value) => `Authorization: ${value}\r\n`).join('');
  return rawRequest(
    gateway.port,
    `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${lines}Connection: close\r\n\r\n`,
  );
}

function base64(bytes: string, encoding: BufferEncoding = 'utf8'): string {
  return Buffer.from(bytes, encoding).toString('base64');
}

describe('Basic authentication that succeeds', () => {
  it('forwards a valid pair with the verified identity and without the Authorization header', async () => {
    const mark = upstreamMark(upstream);
    const res = await get(basicHeader(KEY, SECRET));
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
    const seen = mark.since();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers).toMatchObject({
      'x-auth-subject': 'bob',
      'x-auth-method': 'basic',
      'x-auth-key': KEY,
      'x-request-id': res.headers['x-request-id'],
    });
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });

  it.each(['basic', 'BASIC', 'bAsIc'])('accepts the scheme spelled %s', async (scheme) => {
    const mark = upstreamMark(upstream);
    const res = await get(`${scheme} ${base64(`${KEY}:${SECRET}`)}`);
    expect(res.status).toBe(200);
    expect(mark.since()[0]?.headers['x-auth-subject']).toBe('bob');
  });

  it('accepts a self-describing key id another service wrote', async () => {
    const mark = upstreamMark(upstream);
    expect((await get(basicHeader(TAGGED, SECRET))).status).toBe(200);
    expect(mark.since()[0]?.headers['x-auth-key']).toBe(TAGGED);
  });

  it('accepts the RFC 7617 example Aladdin:open sesame as QWxhZGRpbjpvcGVuIHNlc2FtZQ==', async () => {
    const mark = upstreamMark(upstream);
    const res = await get('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
    expect(res.status).toBe(200);
    expect(mark.since()[0]?.headers).toMatchObject({
      'x-auth-subject': 'aladdin',
      'x-auth-key': 'Aladdin',
    });
  });

  it('accepts the RFC 7617 UTF-8 example test:123£ as dGVzdDoxMjPCow==', async () => {
    const mark = upstreamMark(upstream);
    const res = await get('Basic dGVzdDoxMjPCow==');
    expect(res.status).toBe(200);
    expect(mark.since()[0]?.headers).toMatchObject({ 'x-auth-subject': 'tester' });
  });

  it('splits at the first colon, so a secret may contain colons', async () => {
    const mark = upstreamMark(upstream);
    const res = await get(basicHeader('ak_colon', 'se:cr:et'));
    expect(res.status).toBe(200);
    expect(mark.since()[0]?.headers).toMatchObject({ 'x-auth-key': 'ak_colon' });
  });

  it('accepts a secret of exactly 72 bytes', async () => {
    const res = await get(basicHeader('ak_long', SECRET_72));
    expect(res.status).toBe(200);
  });
});

describe('malformed Basic credentials', () => {
  const malformed: [string, string][] = [
    ['base64 with characters outside the alphabet', 'QWxh!!ZGRpbjpvcGVuIHNlc2FtZQ=='],
    ['base64 without its padding', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ'],
    ['base64 with non-zero padding bits', 'QWxhZGRpbjpvcGVuIHNlc2FtZR=='],
    ['base64 with embedded whitespace', 'QWxhZGRp bjpvcGVuIHNlc2FtZQ=='],
    ['invalid UTF-8 (test:123£ in latin1)', base64('test:123\xa3', 'latin1')],
    ['invalid UTF-8 (a lone continuation byte)', base64(`${KEY}:\x80${SECRET}`, 'latin1')],
    ['no colon', base64(`${KEY}${SECRET}`)],
    ['a control character in the secret', base64(`${KEY}:sec\x01ret`)],
    ['DEL in the secret', base64(`${KEY}:${SECRET}\x7f`)],
    ['a tab in the key', base64(`ak\tbasic:${SECRET}`)],
    ['a NUL in the secret', base64(`${KEY}:${SECRET}\x00`)],
  ];

  it.each(malformed)(
    'answers 400 malformed_authorization for %s and forwards nothing',
    async (_what, encoded) => {
      const mark = upstreamMark(upstream);
      const res = await get(`Basic ${encoded}`);
      expectGatewayError(res, 'malformed_authorization');
      expect(mark.since()).toEqual([]);
    },
  );

  it.each(['Basic', 'Basic '])(
    'answers 400 malformed_authorization for the header %j with nothing after the scheme',
    async (value) => {
      const mark = upstreamMark(upstream);
      const res = await rawGet([value]);
      expectGatewayError(res, 'malformed_authorization');
      expect(mark.since()).toEqual([]);
    },
  );

  it('answers 400 malformed_authorization for two Authorization lines, even two valid ones', async () => {
    const mark = upstreamMark(upstream);
    const valid = basicHeader(KEY, SECRET);
    const res = await rawGet([valid, valid]);
    expectGatewayError(res, 'malformed_authorization');
    expect(mark.since()).toEqual([]);
  });

  it('answers 400 malformed_authorization for a valid Authorization line followed by another', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawGet([basicHeader(KEY, SECRET), basicHeader('ak_other', 'x')]);
    expectGatewayError(res, 'malformed_authorization');
    expect(mark.since()).toEqual([]);
  });
});

describe('Basic credentials that are refused', () => {
  const refused: [string, string][] = [
    ['an empty secret', basicHeader(KEY, '')],
    ['an empty key', basicHeader('', SECRET)],
    // Runs after the 72-byte secret was verified and cached: neither bcrypt's truncation nor
    // the cache may let the longer one through.
    ['a secret longer than 72 bytes whose first 72 match', basicHeader('ak_long', `${SECRET_72}X`)],
    ['a secret with one byte less', basicHeader(KEY, SECRET.slice(0, -1))],
    ['a revoked key with its right secret', basicHeader('ak_revoked', SECRET)],
    ['a key spelled in another case', basicHeader(KEY.toUpperCase(), SECRET)],
  ];

  it.each(refused)(
    'answers 401 invalid_credentials for %s and forwards nothing',
    async (_what, authorization) => {
      const mark = upstreamMark(upstream);
      const res = await rawGet([authorization]);
      expectGatewayError(res, 'invalid_credentials');
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_CHALLENGE]);
      expect(mark.since()).toEqual([]);
    },
  );

  it('answers a wrong secret and an unknown key identically apart from the request id', async () => {
    const mark = upstreamMark(upstream);
    const wrongSecret = await rawGet([basicHeader(KEY, 'not-the-secret-0123456789abcdefghijk')]);
    const unknownKey = await rawGet([basicHeader('ak_nobody', SECRET)]);
    expectGatewayError(wrongSecret, 'invalid_credentials');
    expectGatewayError(unknownKey, 'invalid_credentials');
    expect(comparableHeaders(wrongSecret.headers)).toEqual(comparableHeaders(unknownKey.headers));
    const idA = wrongSecret.headers['x-request-id'];
    const idB = unknownKey.headers['x-request-id'];
    expect(idA).not.toEqual(idB);
    expect(withoutRequestId(wrongSecret.json)).toEqual(withoutRequestId(unknownKey.json));
    expect(mark.since()).toEqual([]);
  });

  it('answers a key id whose checksum fails exactly like a wrong secret, and logs it as unusable', async () => {
    const mark = upstreamMark(upstream);
    const wrongSecret = await rawGet([basicHeader(TAGGED, 'not-the-secret-0123456789abcdefghijk')]);
    const mistyped = await rawGet([basicHeader(MISTYPED, SECRET)]);
    expectGatewayError(mistyped, 'invalid_credentials');
    expect(comparableHeaders(mistyped.headers)).toEqual(comparableHeaders(wrongSecret.headers));
    expect(withoutRequestId(mistyped.json)).toEqual(withoutRequestId(wrongSecret.json));
    expect(mark.since()).toEqual([]);
    await expect(
      gateway.waitForLog('authentication failed', { key: MISTYPED }),
    ).resolves.toMatchObject({ scheme: 'basic', reason: 'unusable_credentials' });
  });

  it('answers 401 missing_credentials with a Basic and a Bearer challenge when no Authorization is sent', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawGet([]);
    expectGatewayError(res, 'missing_credentials');
    expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_CHALLENGE]);
    expect(mark.since()).toEqual([]);
  });

  it.each([
    'Digest username="Aladdin", realm="accounts-gateway", nonce="abc", uri="/accounts", response="0"',
    'Negotiate YIIGhgYJKoZIhvcSAQICAQBuggZ1MIIGcaADAgEF',
    'QWxhZGRpbjpvcGVuIHNlc2FtZQ==',
  ])(
    'answers 401 missing_credentials with both challenges for the unsupported Authorization %s',
    async (authorization) => {
      const mark = upstreamMark(upstream);
      const res = await rawGet([authorization]);
      expectGatewayError(res, 'missing_credentials');
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_CHALLENGE]);
      expect(mark.since()).toEqual([]);
    },
  );
});

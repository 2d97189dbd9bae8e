import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { EXPIRY_MESSAGES } from '../../src/credentials/key-expiry.js';
import { KEYS_PAGE_MESSAGES } from '../../src/endpoints/key-page-query.js';
import { CREATE_KEY_MESSAGES } from '../../src/errors/gateway-error.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BASIC_CHALLENGE,
  BEARER_REJECTED,
  expectGatewayError,
} from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import { comparableHeaders, withoutRequestId, type HttpAnswer } from '../support/http-answer.js';
import { expectKeyIdOf } from '../support/key-ids.js';
import { pollStatus } from '../support/poll-status.js';
import { rawRequest } from '../support/raw-request.js';
import {
  putUser,
  removeUser,
  seedKey,
  TEST_BCRYPT_COST,
  uniquePrefix,
} from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Key-pair self-service (issue 3, part 1) through a gateway process on the Redis store:
// GET/POST /keys and DELETE /keys/{key}, with Basic or Bearer, always scoped to the caller.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('keysself');
const MAX_BODY_BYTES = 512;
const MAX_ACTIVE = 3;

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  const signing = await generateSigningKey();
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      signingKeyPem: signing.pem,
      config: {
        server: { maxBodyBytes: MAX_BODY_BYTES },
        // Last use is not kept here: the views must not change under a timer (see last-use tests).
        keys: { maxActivePerSubject: MAX_ACTIVE, lastUsedIntervalSec: 0 },
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

interface Pair {
  readonly key: string;
  readonly secret: string;
  readonly subject: string;
}

let subjects = 0;

/** A subject of its own for each test (the cap is per subject), with one seeded pair. */
async function freshSubject(name: string): Promise<Pair> {
  subjects += 1;
  const subject = `${name}-${subjects}`;
  const pair = {
    key: `ak_seed${randomBytes(8).toString('hex')}`,
    secret: randomBytes(24).toString('base64url'),
    subject,
  };
  await seedKey(redisUrl, prefix, { ...pair, label: 'seeded' });
  return pair;
}

function auth(pair: Pair): { authorization: string } {
  return { authorization: basicHeader(pair.key, pair.secret) };
}

function bearer(token: string): { authorization: string } {
  return { authorization: bearerHeader(token) };
}

const listKeys = (headers: Record<string, string>): Promise<HttpAnswer> =>
  send(gateway.url, '/keys', { headers });

const createKey = (headers: Record<string, string>, body?: unknown): Promise<HttpAnswer> =>
  send(gateway.url, '/keys', {
    method: 'POST',
    headers: body === undefined ? headers : { ...JSON_TYPE, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const revokeKey = (headers: Record<string, string>, key: string, query = ''): Promise<HttpAnswer> =>
  send(gateway.url, `/keys/${key}${query}`, { method: 'DELETE', headers });

const getAccounts = (headers: Record<string, string>): Promise<HttpAnswer> =>
  send(gateway.url, '/accounts', { headers });

interface KeyView {
  id: string;
  key: string;
  label: string;
  status: string;
  created_at: string;
  revoked_at?: string;
  expires_at: string | null;
  scopes: string[];
  expiring_soon: boolean;
  secret?: string;
}

function dataOf(answer: HttpAnswer): KeyView[] {
  return (answer.json as { data: KeyView[] }).data;
}

/** Creates a pair through the API and returns it as a Pair. */
async function createdPair(owner: Pair, label?: string): Promise<Pair> {
  const res = await createKey(auth(owner), label === undefined ? undefined : { label });
  expect(res.status).toBe(201);
  const [view] = dataOf(res);
  if (view?.secret === undefined) throw new Error(`no secret in ${res.body}`);
  return { key: view.key, secret: view.secret, subject: owner.subject };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const VIEW_FIELDS = [
  'created_at',
  'expires_at',
  'expiring_soon',
  'id',
  'key',
  'label',
  'last_used_at',
  'scopes',
  'status',
];

describe('GET /keys', () => {
  it("lists the caller's pairs newest first, without a secret or any hash", async () => {
    const owner = await freshSubject('list');
    const first = await createdPair(owner, 'first');
    const second = await createdPair(owner, 'second');
    const res = await listKeys(auth(owner));
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const data = dataOf(res);
    expect(res.json).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 3, limit: 1000, order: 'desc', last_id: data[2]?.id },
      data: expect.any(Array) as unknown,
    });
    expect(new Set(data.map((v) => v.key))).toEqual(new Set([owner.key, first.key, second.key]));
    for (const view of data) {
      expect(Object.keys(view).sort()).toEqual(VIEW_FIELDS);
      expect(view).toEqual({
        id: view.key,
        key: view.key,
        label: view.key === owner.key ? 'seeded' : view.key === first.key ? 'first' : 'second',
        status: 'active',
        created_at: expect.stringMatching(ISO) as unknown,
        expires_at: null,
        scopes: [],
        last_used_at: null,
        expiring_soon: false,
      });
    }
    // Newest first: the seeded pair is the oldest; creation times never increase down the list.
    const times = data.map((v) => v.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(data[2]?.key).toBe(owner.key);
    expect(res.body).not.toContain(owner.secret);
    expect(res.body).not.toContain(first.secret);
    expect(res.body).not.toMatch(/secret|hash|\$2[aby]\$/);
  });

  it('shows revoked pairs with their status and revoked_at, still without a secret', async () => {
    const owner = await freshSubject('listrevoked');
    const other = await createdPair(owner, 'to revoke');
    expect((await revokeKey(auth(owner), other.key)).status).toBe(200);
    const res = await listKeys(auth(owner));
    const revoked = dataOf(res).find((v) => v.key === other.key);
    expect(revoked).toEqual({
      id: other.key,
      key: other.key,
      label: 'to revoke',
      status: 'revoked',
      created_at: expect.stringMatching(ISO) as unknown,
      revoked_at: expect.stringMatching(ISO) as unknown,
      expires_at: null,
      scopes: [],
      last_used_at: null,
      expiring_soon: false,
    });
    expect(res.body).not.toMatch(/secret|hash|\$2[aby]\$/);
  });

  it('marks an active pair ending within 30 days expiring_soon, and neither one ending later nor one revoked', async () => {
    const owner = await freshSubject('listexpiring');
    const DAY_SEC = 86_400;
    const made = async (label: string, days: number): Promise<KeyView> => {
      const res = await createKey(auth(owner), { label, expires_in: days * DAY_SEC });
      expect(res.status).toBe(201);
      const [view] = dataOf(res);
      if (view === undefined) throw new Error(`no pair in ${res.body}`);
      return view;
    };
    const soon = await made('soon', 29);
    const later = await made('later', 31);
    // Told when made: a pair of 29 days needs a roll within them.
    expect([soon.expiring_soon, later.expiring_soon]).toEqual([true, false]);
    const flags = async (): Promise<Record<string, boolean>> =>
      Object.fromEntries(
        dataOf(await listKeys(auth(owner))).map((view) => [view.label, view.expiring_soon]),
      );
    expect(await flags()).toEqual({ seeded: false, soon: true, later: false });
    const revoked = await revokeKey(auth(owner), soon.key);
    expect(dataOf(revoked)[0]).toMatchObject({ status: 'revoked', expiring_soon: false });
    expect(await flags()).toEqual({ seeded: false, soon: false, later: false });
  });

  it('answers 401 missing_credentials without credentials', async () => {
    expectGatewayError(await listKeys({}), 'missing_credentials');
  });

  it('pages with limit, order and last_id, and says in meta which page it answered', async () => {
    const owner = await freshSubject('paged');
    await createdPair(owner, 'second');
    await createdPair(owner, 'third');
    const all = dataOf(await listKeys(auth(owner))).map((v) => v.key);
    expect(all).toHaveLength(3);
    const page = (query: string) => send(gateway.url, `/keys${query}`, { headers: auth(owner) });

    const first = await page('?limit=2');
    expect(first.status).toBe(200);
    expect((first.json as { meta: unknown }).meta).toEqual({
      count: 2,
      limit: 2,
      order: 'desc',
      last_id: all[1],
    });
    expect(dataOf(first).map((v) => v.key)).toEqual(all.slice(0, 2));
    const next = await page(`?limit=2&last_id=${all[1]}`);
    expect(dataOf(next).map((v) => v.key)).toEqual(all.slice(2));
    expect((next.json as { meta: unknown }).meta).toEqual({
      count: 1,
      limit: 2,
      order: 'desc',
      last_id: all[2],
    });
    const ascending = await page('?order=asc&limit=1000&cachebuster=1');
    expect(dataOf(ascending).map((v) => v.key)).toEqual([...all].reverse());
    expect((ascending.json as { meta: { order: string } }).meta.order).toBe('asc');
    const past = await page(`?last_id=${all[2]}`);
    expect((past.json as { meta: unknown; data: unknown }).meta).toEqual({
      count: 0,
      limit: 1000,
      order: 'desc',
      last_id: null,
    });
  });

  it('answers 400 saying why to a limit, order or last_id it cannot use', async () => {
    const owner = await freshSubject('pagebad');
    const other = await freshSubject('pageother');
    // One of each (test/unit/endpoints has the parser's every case), and the cursors only
    // the store can judge.
    const cases: [string, string][] = [
      ['?limit=1001', KEYS_PAGE_MESSAGES.limit],
      ['?order=newest', KEYS_PAGE_MESSAGES.order],
      ['?last_id=ak_not_a_pair_of_anyone', KEYS_PAGE_MESSAGES.lastId],
      // Another subject's pair reads exactly like one that does not exist.
      [`?last_id=${other.key}`, KEYS_PAGE_MESSAGES.lastId],
    ];
    for (const [query, message] of cases)
      expectGatewayError(
        await send(gateway.url, `/keys${query}`, { headers: auth(owner) }),
        'bad_request',
        { message },
      );
  });
});

describe('POST /keys', () => {
  it('answers 201 with the new pair and its secret once, not cacheable, with a label', async () => {
    const owner = await freshSubject('create');
    const res = await createKey(auth(owner), { label: 'ci runner' });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const [view] = dataOf(res);
    expect(res.json).toEqual({
      result: 'success',
      status: 201,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: view?.key },
      data: [
        {
          id: view?.key,
          key: expect.any(String) as unknown,
          secret: expect.stringMatching(/^[0-9A-Za-z]{40,72}$/) as unknown,
          label: 'ci runner',
          status: 'active',
          created_at: expect.stringMatching(ISO) as unknown,
          expires_at: null,
          scopes: [],
          last_used_at: null,
          expiring_soon: false,
        },
      ],
    });
    // A self-describing id carrying the caller's subject (identity/key-id.ts).
    expectKeyIdOf(view?.key, owner.subject);
    // The secret is shown this once: the listing has the pair, but not its secret.
    const listed = await listKeys(auth(owner));
    expect(dataOf(listed).map((v) => v.key)).toContain(view?.key);
    expect(listed.body).not.toContain(view?.secret);
  });

  it('stores only a bcrypt hash of the secret, at credentials.bcryptCost', async () => {
    const owner = await freshSubject('stored');
    const pair = await createdPair(owner, 'stored');
    const redis = new Redis(redisUrl);
    try {
      const stored = await redis.hgetall(redisLayout(prefix).key(pair.key, owner.subject));
      expect(stored.secret_hash).toMatch(new RegExp(`^\\$2b\\$0${TEST_BCRYPT_COST}\\$`));
      expect(await bcrypt.compare(pair.secret, stored.secret_hash ?? '')).toBe(true);
      expect(JSON.stringify(stored)).not.toContain(pair.secret);
    } finally {
      redis.disconnect();
    }
  });

  it('makes a pair with an empty label when there is no body or no label', async () => {
    const owner = await freshSubject('nolabel');
    for (const body of [undefined, {}]) {
      const res = await createKey(auth(owner), body);
      expect(res.status).toBe(201);
      expect(dataOf(res)).toEqual([expect.objectContaining({ label: '', status: 'active' })]);
    }
  });

  it('makes a pair that works at once for /accounts', async () => {
    const owner = await freshSubject('works');
    const pair = await createdPair(owner, 'fresh');
    const mark = upstreamMark(upstream);
    const res = await getAccounts(auth(pair));
    expect(res.status).toBe(200);
    expect(mark.since()).toEqual([
      expect.objectContaining({
        headers: expect.objectContaining({
          'x-auth-subject': owner.subject,
          'x-auth-method': 'basic',
          'x-auth-key': pair.key,
        }) as unknown,
      }),
    ]);
  });

  it('lets a client that asked for Connection: close see the connection end after /accounts', async () => {
    // Found while writing these tests: the proxied answer says `connection: keep-alive`
    // (the upstream's hop-by-hop header) and the gateway keeps the socket open, so a
    // keep-alive client (Node's default agent) sends its next request there and gets a raw
    // 400 bad_request. RFC 9112 §9.6: after `Connection: close` the server closes.
    const owner = await freshSubject('close');
    const pair = await createdPair(owner);
    const { raw, closedByServer } = await rawRequest(
      gateway.port,
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: ${auth(pair).authorization}\r\nConnection: close\r\n\r\n`,
      { untilClosed: true, giveUpMs: 2_000 },
    );
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(raw.toLowerCase()).not.toContain('connection: keep-alive');
    expect(closedByServer).toBe(true);
  });

  it('answers 415 for a body that is not application/json', async () => {
    const owner = await freshSubject('type');
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
      const res = await send(gateway.url, '/keys', {
        method: 'POST',
        headers: { ...auth(owner), 'content-type': type },
        body: '{"label":"x"}',
      });
      expectGatewayError(res, 'unsupported_media_type');
    }
    expect(dataOf(await listKeys(auth(owner)))).toHaveLength(1);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const owner = await freshSubject('badjson');
    for (const body of ['{"label":', 'label=x', '\xff\xfe']) {
      const res = await send(gateway.url, '/keys', {
        method: 'POST',
        headers: { ...auth(owner), ...JSON_TYPE },
        body,
      });
      expectGatewayError(res, 'bad_request');
    }
    expect(dataOf(await listKeys(auth(owner)))).toHaveLength(1);
  });

  it('answers 400 naming the label when it is not one, or the body when it is not an object', async () => {
    const owner = await freshSubject('badlabel');
    for (const body of [
      { label: 42 },
      { label: null },
      { label: ['a'] },
      { label: 'x'.repeat(201) },
    ])
      expectGatewayError(await createKey(auth(owner), body), 'bad_request', {
        message: CREATE_KEY_MESSAGES.label,
      });
    for (const body of [['a'], 'a', 7])
      expectGatewayError(await createKey(auth(owner), body), 'bad_request', {
        message: CREATE_KEY_MESSAGES.body,
      });
    expect(dataOf(await listKeys(auth(owner)))).toHaveLength(1);
  });

  it('answers 413 for a body over server.maxBodyBytes, by Content-Length or while reading', async () => {
    const owner = await freshSubject('large');
    const body = JSON.stringify({ label: 'x'.repeat(MAX_BODY_BYTES) });
    const declared = await send(gateway.url, '/keys', {
      method: 'POST',
      headers: { ...auth(owner), ...JSON_TYPE },
      body,
    });
    expectGatewayError(declared, 'payload_too_large');
    // Chunked: no Content-Length to check first, so the limit applies while reading.
    const chunked = await rawRequest(
      gateway.port,
      `POST /keys HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: ${auth(owner).authorization}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expectGatewayError(chunked, 'payload_too_large');
    expect(dataOf(await listKeys(auth(owner)))).toHaveLength(1);
  });

  it('answers 422 limit_exceeded once the subject has keys.maxActivePerSubject active pairs', async () => {
    const owner = await freshSubject('cap');
    for (let i = 1; i < MAX_ACTIVE; i += 1) await createdPair(owner, `pair ${i}`);
    const res = await createKey(auth(owner), { label: 'one too many' });
    expectGatewayError(res, 'limit_exceeded');
    const listed = dataOf(await listKeys(auth(owner)));
    expect(listed).toHaveLength(MAX_ACTIVE);
    expect(listed.map((v) => v.label)).not.toContain('one too many');
  });

  it('counts only active pairs against the cap: revoking one makes room again', async () => {
    const owner = await freshSubject('caproom');
    const pairs = [await createdPair(owner), await createdPair(owner)];
    expectGatewayError(await createKey(auth(owner)), 'limit_exceeded');
    expect((await revokeKey(auth(owner), pairs[0]?.key ?? '')).status).toBe(200);
    expect((await createKey(auth(owner))).status).toBe(201);
  });
});

describe('key expiry', () => {
  it('answers an expired pair exactly like a revoked one, also once it was cached', async () => {
    const owner = await freshSubject('expiry');
    const res = await createKey(auth(owner), { expires_in: 2 });
    expect(res.status).toBe(201);
    const [view] = dataOf(res);
    if (view?.secret === undefined) throw new Error(`no secret in ${res.body}`);
    const expiring = { key: view.key, secret: view.secret, subject: owner.subject };
    expect(view.status).toBe('active');
    expect(Date.parse(view.expires_at ?? '') - Date.parse(view.created_at)).toBe(2000);
    // Verified once, so the gateway's cache holds it (TTL 60 s here) until it expires.
    expect((await getAccounts(auth(expiring))).status).toBe(200);
    const revoked = await createdPair(owner);
    expect((await revokeKey(auth(owner), revoked.key)).status).toBe(200);

    // The pair's end is a point in time: poll for it rather than guess a sleep.
    const { answer } = await pollStatus(
      () => fetch(`${gateway.url}/accounts`, { headers: auth(expiring) }),
      401,
      { deadlineMs: 5_000, intervalMs: 50 },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(view.expires_at ?? ''));
    expectGatewayError(answer, 'invalid_credentials');
    const asRevoked = await getAccounts(auth(revoked));
    const asExpired = await getAccounts(auth(expiring));
    expect({
      status: asExpired.status,
      headers: comparableHeaders(asExpired.headers),
      body: withoutRequestId(asExpired.json),
    }).toEqual({
      status: asRevoked.status,
      headers: comparableHeaders(asRevoked.headers),
      body: withoutRequestId(asRevoked.json),
    });

    const listed = dataOf(await listKeys(auth(owner))).find((v) => v.key === expiring.key);
    expect(listed).toMatchObject({ status: 'expired', expires_at: view.expires_at });
  });

  it('lists expires_at as null for a pair without one, and keeps an expires_at given in UTC', async () => {
    const owner = await freshSubject('expiryat');
    const res = await createKey(auth(owner), { expires_at: '2035-01-31T13:00:00+01:00' });
    expect(res.status).toBe(201);
    expect(dataOf(res)[0]).toMatchObject({
      status: 'active',
      expires_at: '2035-01-31T12:00:00.000Z',
    });
    const seeded = dataOf(await listKeys(auth(owner))).find((v) => v.key === owner.key);
    expect(seeded?.expires_at).toBeNull();
  });

  it('answers 400 saying why to both expiry members, a bad expires_in or a past expires_at', async () => {
    const owner = await freshSubject('expirybad');
    const cases: [unknown, string][] = [
      [{ expires_in: 60, expires_at: '2035-01-01T00:00:00Z' }, EXPIRY_MESSAGES.both],
      [{ expires_in: 0 }, EXPIRY_MESSAGES.expiresIn],
      [{ expires_in: '60' }, EXPIRY_MESSAGES.expiresIn],
      [{ expires_at: '2001-01-01T00:00:00Z' }, EXPIRY_MESSAGES.expiresAt],
      [{ expires_at: '2035-01-01T00:00:00' }, EXPIRY_MESSAGES.expiresAt],
    ];
    for (const [body, message] of cases)
      expectGatewayError(await createKey(auth(owner), body), 'bad_request', { message });
    // Nothing was made.
    expect(dataOf(await listKeys(auth(owner)))).toHaveLength(1);
  });

  it('does not count an expired pair against the cap', async () => {
    const owner = await freshSubject('expirycap');
    await createdPair(owner);
    const res = await createKey(auth(owner), { expires_in: 1 });
    expect(res.status).toBe(201);
    const [view] = dataOf(res);
    // At the cap (3) until the short-lived pair expires; then there is room again.
    expect((await createKey(auth(owner))).status).toBe(422);
    await pollStatus(
      () => fetch(`${gateway.url}/keys`, { method: 'POST', headers: auth(owner) }),
      201,
      { deadlineMs: 5_000, intervalMs: 100 },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(view?.expires_at ?? ''));
  });
});

describe('DELETE /keys/{key}', () => {
  it('revokes one of the caller’s pairs and the pair stops working at once', async () => {
    const owner = await freshSubject('revoke');
    const pair = await createdPair(owner, 'doomed');
    // Verified once, so the gateway has it cached.
    expect((await getAccounts(auth(pair))).status).toBe(200);
    expect((await getAccounts(auth(pair))).status).toBe(200);
    const res = await revokeKey(auth(owner), pair.key);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: pair.key },
      data: [
        {
          id: pair.key,
          key: pair.key,
          label: 'doomed',
          status: 'revoked',
          created_at: expect.stringMatching(ISO) as unknown,
          revoked_at: expect.stringMatching(ISO) as unknown,
          expires_at: null,
          scopes: [],
          last_used_at: null,
          expiring_soon: false,
        },
      ],
    });
    expectGatewayError(await getAccounts(auth(pair)), 'invalid_credentials');
    expect((await getAccounts(auth(owner))).status).toBe(200);
  });

  it('lets a pair revoke itself while another stays active', async () => {
    const owner = await freshSubject('self');
    const pair = await createdPair(owner);
    expect((await getAccounts(auth(pair))).status).toBe(200);
    expect((await revokeKey(auth(pair), pair.key)).status).toBe(200);
    expectGatewayError(await getAccounts(auth(pair)), 'invalid_credentials');
  });

  it('answers 409 conflict for the last active pair unless ?force=true', async () => {
    const owner = await freshSubject('last');
    const refused = await revokeKey(auth(owner), owner.key);
    expectGatewayError(refused, 'conflict');
    expect((await getAccounts(auth(owner))).status).toBe(200);
    for (const query of ['?force=false', '?force=1', '?forced=true']) {
      expectGatewayError(await revokeKey(auth(owner), owner.key, query), 'conflict');
    }
    const forced = await revokeKey(auth(owner), owner.key, '?force=true');
    expect(forced.status).toBe(200);
    expect(dataOf(forced)).toEqual([
      expect.objectContaining({ key: owner.key, status: 'revoked' }),
    ]);
    expectGatewayError(await getAccounts(auth(owner)), 'invalid_credentials');
  });

  it('answers 200 again with the same record for a pair already revoked', async () => {
    const owner = await freshSubject('twice');
    const pair = await createdPair(owner, 'twice');
    const first = await revokeKey(auth(owner), pair.key);
    const second = await revokeKey(auth(owner), pair.key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.json).toEqual(first.json);
  });

  it('answers 404 not_found for a key that does not exist', async () => {
    const owner = await freshSubject('missing');
    const missing = await revokeKey(auth(owner), 'ak_doesnotexist000000000000');
    const requestId = JSON.stringify(missing.headers['x-request-id']);
    expect([missing.status, missing.headers['cache-control'], missing.body]).toEqual([
      404,
      'no-store',
      `{"result":"error","status":404,"error":{"code":"not_found","message":"No key pair with this id belongs to the caller."},"request_id":${requestId}}`,
    ]);
  });
});

describe('isolation between subjects', () => {
  it("never lists another subject's pairs", async () => {
    const a = await freshSubject('isoA');
    const b = await freshSubject('isoB');
    const bSecond = await createdPair(b, 'b only');
    const listed = await listKeys(auth(a));
    expect(dataOf(listed).map((v) => v.key)).toEqual([a.key]);
    expect(listed.body).not.toContain(b.key);
    expect(listed.body).not.toContain(bSecond.key);
  });

  it("answers a DELETE of another subject's pair exactly like one of a pair that does not exist", async () => {
    const a = await freshSubject('isoDelA');
    const b = await freshSubject('isoDelB');
    await createdPair(a);
    await createdPair(b);
    const nonexistent = await revokeKey(auth(a), 'ak_nosuchkey0000000000000');
    for (const query of ['', '?force=true']) {
      const foreign = await revokeKey(auth(a), b.key, query);
      expect([foreign.status, withoutRequestId(foreign.json)]).toEqual([
        404,
        {
          result: 'error',
          status: 404,
          error: { code: 'not_found', message: 'No key pair with this id belongs to the caller.' },
        },
      ]);
      expect(foreign.status).toBe(nonexistent.status);
      expect(withoutRequestId(foreign.json)).toEqual(withoutRequestId(nonexistent.json));
      expect(Object.keys(foreign.headers).sort()).toEqual(Object.keys(nonexistent.headers).sort());
    }
    // B's pair is untouched and still works.
    expect(dataOf(await listKeys(auth(b))).find((v) => v.key === b.key)?.status).toBe('active');
    expect((await getAccounts(auth(b))).status).toBe(200);
  });

  it("answers a GET of another subject's pair exactly like one of the caller's own", async () => {
    const a = await freshSubject('isoGetA');
    const b = await freshSubject('isoGetB');
    const own = await send(gateway.url, `/keys/${a.key}`, { headers: auth(a) });
    const foreign = await send(gateway.url, `/keys/${b.key}`, { headers: auth(a) });
    expectGatewayError(foreign, 'method_not_allowed');
    expect(withoutRequestId(foreign.json)).toEqual(withoutRequestId(own.json));
    expect(foreign.headers.allow).toBe(own.headers.allow);
  });
});

describe('Bearer callers', () => {
  it('list, create and revoke their own pairs with a token from POST /auth/token', async () => {
    const owner = await freshSubject('bearer');
    const username = `user-${owner.subject}`;
    await putUser(redisUrl, prefix, {
      username,
      subject: owner.subject,
      password: 'correct horse 1',
    });
    const token = await issueToken(gateway.url, username, 'correct horse 1', '127.0.0.61');

    const listed = await listKeys(bearer(token));
    expect(listed.status).toBe(200);
    expect(dataOf(listed).map((v) => v.key)).toEqual([owner.key]);

    const created = await createKey(bearer(token), { label: 'from a token' });
    expect(created.status).toBe(201);
    const [view] = dataOf(created);
    // Not bound to the token's exp: tokens are how a web-app user makes durable pairs.
    expect(view).toMatchObject({ label: 'from a token', status: 'active', expires_at: null });
    expect(
      (
        await getAccounts(
          auth({ key: view?.key ?? '', secret: view?.secret ?? '', subject: owner.subject }),
        )
      ).status,
    ).toBe(200);

    const revoked = await revokeKey(bearer(token), view?.key ?? '');
    expect(revoked.status).toBe(200);
    expect(dataOf(revoked)).toEqual([
      expect.objectContaining({ key: view?.key, status: 'revoked' }),
    ]);
  });

  it("refuses a removed user's unexpired token for every /keys operation with 401 invalid_token", async () => {
    const owner = await freshSubject('removed');
    const spare = await createdPair(owner);
    const username = `user-${owner.subject}`;
    await putUser(redisUrl, prefix, {
      username,
      subject: owner.subject,
      password: 'correct horse 2',
    });
    const token = await issueToken(gateway.url, username, 'correct horse 2', '127.0.0.62');
    // Verified (and cached by the gateway) before the user goes.
    expect((await listKeys(bearer(token))).status).toBe(200);
    expect(await removeUser(redisUrl, prefix, username)).toBe(true);

    const answers = [
      await listKeys(bearer(token)),
      await createKey(bearer(token), { label: 'after removal' }),
      await revokeKey(bearer(token), spare.key),
    ];
    // Refused by authentication itself (the token's user is gone), as any invalid token on a
    // route that takes both schemes.
    for (const res of answers) {
      expectGatewayError(res, 'invalid_token');
      expect(res.headers['www-authenticate']).toEqual([BASIC_CHALLENGE, BEARER_REJECTED]);
    }
    // Nothing changed: no new pair, the spare still active.
    const listed = dataOf(await listKeys(auth(owner)));
    expect(listed.map((v) => [v.key, v.status]).sort()).toEqual(
      [
        [owner.key, 'active'],
        [spare.key, 'active'],
      ].sort(),
    );
  });

  it('refuses a token whose user now belongs to another subject', async () => {
    const owner = await freshSubject('moved');
    const username = `user-${owner.subject}`;
    await putUser(redisUrl, prefix, {
      username,
      subject: owner.subject,
      password: 'correct horse 3',
    });
    const token = await issueToken(gateway.url, username, 'correct horse 3', '127.0.0.63');
    await putUser(redisUrl, prefix, {
      username,
      subject: `${owner.subject}-new`,
      password: 'correct horse 3',
    });
    expectGatewayError(await listKeys(bearer(token)), 'invalid_token');
  });
});

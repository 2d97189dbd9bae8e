import bcrypt from 'bcrypt';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { documentedAnswers, exercised, readDocument } from '../support/openapi-validator.js';
import { rawRequest } from '../support/raw-request.js';
import { freePort } from '../support/redis-server.js';
import { putUser, seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send, type RequestOptions } from '../support/send.js';

// The contract of docs/openapi.json against built gateways with the reference upstream and
// a real Redis: every documented path, method and status is answered at least once, each
// answer held to the document by send() (test/support/openapi-validator), and the set
// answered equals the set documented, so a status added to the document without a test fails.

const SECRET = 'contract-secret-0123456789abcdefghijkl';
const pair = (key: string, subject: string, scopes: readonly string[] = []) => ({
  key,
  secret: SECRET,
  subject,
  scopes,
});
const READER = pair('ak_contract_reader', 'contract-a', ['accounts:read']);
const MANAGER = pair('ak_contract_manager', 'contract-a', ['accounts:read', 'keys']);
const SPARE = pair('ak_contract_spare', 'contract-a', ['keys']);
const NO_SCOPE = pair('ak_contract_noscope', 'contract-a');
const LONELY = pair('ak_contract_lonely', 'contract-lonely', ['keys']);
/** Refused once from LOCKED_FROM, then locked there (lockout.basic.keyAddress.threshold 1). */
const LOCKED = pair('ak_contract_locked', 'contract-b', ['accounts:read', 'keys']);
const LOCKED_FROM = '127.0.0.77';
const USER = { username: 'contract-user', password: 'contract-password-1', subject: 'contract-a' };
/** Spends the address rate limit of the routes without credentials. */
const LIMITED_FROM = '127.0.0.79';
/** Not in server.trustedProxies: the forward-auth check refuses it. */
const UNTRUSTED_FROM = '127.0.0.80';

const LISTING = ['/account', '/accounts', '/accounts/'];
const MAX_ACTIVE = 5;
/** Every method a path item can name (docs/openapi.json lists each on every path). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'];
/** A request target of each documented path but the check's, and the methods it takes. */
const TAKING = [
  ...LISTING.map((target) => ({ target, taken: ['GET', 'HEAD'] })),
  { target: '/keys', taken: ['GET', 'HEAD', 'POST'] },
  { target: '/keys/events', taken: ['GET', 'HEAD'] },
  { target: `/keys/${SPARE.key}`, taken: ['DELETE'] },
  { target: `/keys/${SPARE.key}/roll`, taken: ['POST'] },
  { target: '/auth/token', taken: ['POST'] },
  { target: '/.well-known/jwks.json', taken: ['GET', 'HEAD'] },
  { target: '/openapi.json', taken: ['GET', 'HEAD'] },
];
/** Every documented path, as a request target. */
const TARGETS = [...TAKING.map(({ target }) => target), '/auth/check', '/auth/check/accounts'];

function config(extra: GatewayConfigInput = {}): GatewayConfigInput {
  return {
    routes: [
      {
        name: 'accounts',
        paths: LISTING,
        upstream: 'accounts',
        upstreamPath: '/accounts',
        scopes: ['accounts:read'],
      },
    ],
    keys: { requiredScopes: ['keys'], maxActivePerSubject: MAX_ACTIVE },
    lockout: {
      basic: { keyAddress: { threshold: 1 } },
      token: { usernameAddress: { threshold: 1 } },
    },
    rateLimits: { address: { requests: 40, periodSec: 3600 } },
    forwardAuth: { enabled: true },
    server: { trustedProxies: ['127.0.0.1'] },
    referenceUpstream: { accounts: { 'contract-a': [{ id: 7, name: 'seven' }] } },
    ...extra,
  };
}

let gateway: GatewayProcess;
/** Its Redis is a port nothing listens on: every credential check answers 503. */
let storeDown: GatewayProcess;
/** Its upstream refuses connections: 502. */
let refused: GatewayProcess;
/** Its upstream never answers: 504. */
let silent: GatewayProcess;
let silentUpstream: Server;
/** Its upstream answers 404 to everything: passed through, the listing's `default`. */
let absent: GatewayProcess;
/** Its server.headersTimeoutMs is short: a head left unfinished is answered 408 soon. */
let impatient: GatewayProcess;
const stopped: Server[] = [];

/** A gateway on the memory store, READER seeded, forwarding the listing to `upstreamUrl`. */
async function memoryGateway(
  upstreamUrl: string,
  extra: GatewayConfigInput = {},
): Promise<GatewayProcess> {
  return startGateway(
    gatewayYaml({
      upstreamUrl,
      config: {
        ...config({
          ...extra,
          upstreams: { accounts: { url: upstreamUrl, timeoutMs: 300 } },
          credentials: {
            seed: {
              keys: [
                {
                  key: READER.key,
                  secretHash: await bcrypt.hash(SECRET, TEST_BCRYPT_COST),
                  subject: READER.subject,
                  scopes: [...READER.scopes],
                },
              ],
            },
          },
        }),
      },
    }),
  );
}

beforeAll(async () => {
  const redisUrl = inject('redisUrl');
  const keyPrefix = uniquePrefix('contract');
  for (const p of [READER, MANAGER, SPARE, NO_SCOPE, LONELY, LOCKED])
    await seedKey(redisUrl, keyPrefix, p);
  await putUser(redisUrl, keyPrefix, { ...USER, scopes: ['accounts:read', 'keys'] });
  gateway = await startGateway(
    gatewayYaml({ upstreamUrl: 'builtin', redis: { url: redisUrl, keyPrefix }, config: config() }),
  );
  storeDown = await startGateway(
    gatewayYaml({
      upstreamUrl: 'builtin',
      redis: { url: `redis://127.0.0.1:${await freePort()}`, keyPrefix },
      // The address limit's store is down too: closed, the routes without credentials 503.
      config: config({
        // Exact mode: onStoreError is its answer (a lease-mode limit decides in process).
        rateLimits: {
          address: { requests: 40, periodSec: 3600, mode: 'exact' },
          onStoreError: 'closed',
        },
      }),
    }),
  );
  refused = await memoryGateway(`http://127.0.0.1:${await freePort()}`);
  silentUpstream = createServer(() => {
    // Never answers: the gateway's upstream timeout decides.
  });
  await new Promise<void>((resolve) => silentUpstream.listen(0, '127.0.0.1', resolve));
  stopped.push(silentUpstream);
  silent = await memoryGateway(
    `http://127.0.0.1:${(silentUpstream.address() as AddressInfo).port}`,
  );
  const absentUpstream = createServer((_, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('no such listing');
  });
  await new Promise<void>((resolve) => absentUpstream.listen(0, '127.0.0.1', resolve));
  stopped.push(absentUpstream);
  absent = await memoryGateway(
    `http://127.0.0.1:${(absentUpstream.address() as AddressInfo).port}`,
  );
  impatient = await memoryGateway('builtin', {
    server: { trustedProxies: ['127.0.0.1'], headersTimeoutMs: 300, requestTimeoutMs: 1000 },
  });
});

afterAll(async () => {
  await Promise.all([gateway, storeDown, refused, silent, absent, impatient].map((g) => g?.stop()));
  for (const server of stopped) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const basic = (p: { key: string; secret: string }, secret = p.secret) => ({
  authorization: basicHeader(p.key, secret),
});
const MALFORMED = { authorization: 'Basic !!!' };

async function expectStatus(
  on: GatewayProcess,
  method: string,
  path: string,
  status: number,
  options: RequestOptions = {},
): Promise<HttpAnswer> {
  const answer = await send(on.url, path, { ...options, method });
  expect(answer.status, `${method} ${path}: ${answer.body}`).toBe(status);
  return answer;
}

describe('docs/openapi.json against built gateways', () => {
  it('answers every documented status of the listing, each as documented', async () => {
    for (const path of LISTING)
      for (const method of ['GET', 'HEAD']) {
        await expectStatus(gateway, method, path, 200, { headers: basic(READER) });
        await expectStatus(gateway, method, path, 400, { headers: MALFORMED });
        await expectStatus(gateway, method, path, 401);
        await expectStatus(gateway, method, path, 403, { headers: basic(NO_SCOPE) });
        await expectStatus(storeDown, method, path, 503, { headers: basic(READER) });
        await expectStatus(refused, method, path, 502, { headers: basic(READER) });
        await expectStatus(silent, method, path, 504, { headers: basic(READER) });
        const passed = await expectStatus(absent, method, path, 404, { headers: basic(READER) });
        if (method === 'GET') expect(passed.body).toBe('no such listing');
      }
    const bearer = {
      authorization: bearerHeader(await issueToken(gateway.url, USER.username, USER.password)),
    };
    await expectStatus(gateway, 'GET', '/accounts', 200, { headers: bearer });
  });

  it('answers every documented status of the key-pair endpoints', async () => {
    for (const method of ['GET', 'HEAD']) {
      await expectStatus(gateway, method, '/keys', 200, { headers: basic(MANAGER) });
      await expectStatus(gateway, method, '/keys?limit=0', 400, { headers: basic(MANAGER) });
      await expectStatus(gateway, method, '/keys', 401);
      await expectStatus(gateway, method, '/keys', 403, { headers: basic(READER) });
      await expectStatus(storeDown, method, '/keys', 503, { headers: basic(MANAGER) });
    }
    const post = (status: number, options: RequestOptions, on = gateway) =>
      expectStatus(on, 'POST', '/keys', status, options);
    const json = (body: unknown) => ({ body: JSON.stringify(body) });
    const manager = { ...basic(MANAGER), ...JSON_TYPE };
    const created = await post(201, {
      headers: manager,
      ...json({ label: 'contract', expires_in: 3600 }),
    });
    expect(created.headers.pragma).toBe('no-cache');
    await post(400, { headers: manager, ...json({ label: 7 }) });
    await post(401, { headers: JSON_TYPE, ...json({}) });
    await post(403, { headers: manager, ...json({ scopes: ['admin'] }) });
    await post(413, { headers: manager, body: JSON.stringify({ label: 'x'.repeat(5000) }) });
    await post(415, { headers: { ...basic(MANAGER), 'content-type': 'text/plain' }, body: 'x' });
    // contract-a holds five active pairs now: the cap.
    await post(422, { headers: manager, ...json({}) });
    await post(503, { headers: manager, ...json({}) }, storeDown);

    const del = (status: number, key: string, options: RequestOptions = {}, on = gateway) =>
      expectStatus(on, 'DELETE', `/keys/${key}`, status, options);
    await del(200, SPARE.key, { headers: basic(MANAGER) });
    await del(400, SPARE.key, { headers: MALFORMED });
    await del(401, SPARE.key);
    await del(403, SPARE.key, { headers: basic(READER) });
    await del(404, 'ak_contract_nobody', { headers: basic(MANAGER) });
    await del(409, LONELY.key, { headers: basic(LONELY) });
    // Only `true` forces: any other value is simply not forced.
    await del(409, `${LONELY.key}?force=yes`, { headers: basic(LONELY) });
    await del(503, SPARE.key, { headers: basic(MANAGER) }, storeDown);
  });

  it('answers every documented status of the audit events of a holder', async () => {
    for (const method of ['GET', 'HEAD']) {
      const events = await expectStatus(gateway, method, '/keys/events?limit=5', 200, {
        headers: basic(MANAGER),
      });
      if (method === 'GET')
        expect((events.json as { meta: { count: number } }).meta.count).toBeGreaterThan(0);
      await expectStatus(gateway, method, '/keys/events?last_id=nope', 400, {
        headers: basic(MANAGER),
      });
      await expectStatus(gateway, method, '/keys/events', 401);
      await expectStatus(gateway, method, '/keys/events', 403, { headers: basic(READER) });
      await expectStatus(storeDown, method, '/keys/events', 503, { headers: basic(MANAGER) });
    }
  });

  it('answers every documented status of the roll of a pair', async () => {
    const roll = (status: number, key: string, options: RequestOptions, on = gateway) =>
      expectStatus(on, 'POST', `/keys/${key}/roll`, status, options);
    const manager = { ...basic(MANAGER), ...JSON_TYPE };
    const overlap = (overlapSec: number) => JSON.stringify({ overlap_sec: overlapSec });
    // contract-a holds four usable pairs (SPARE is revoked): a roll is allowed at the cap of
    // five, the rolled pair not counted, until the pairs in their overlap make it six.
    let next = NO_SCOPE.key;
    for (let i = 0; i < 2; i += 1) {
      const rolled = await roll(201, next, { headers: manager, body: overlap(3600) });
      expect(rolled.headers.pragma).toBe('no-cache');
      next = (rolled.json as { data: [{ key: string }] }).data[0].key;
    }
    await roll(422, next, { headers: manager, body: overlap(60) });
    await roll(400, next, { headers: manager, body: overlap(86_401) });
    await roll(401, next, { headers: JSON_TYPE, body: overlap(60) });
    await roll(403, next, { headers: { ...basic(READER), ...JSON_TYPE }, body: overlap(60) });
    await roll(404, 'ak_contract_nobody', { headers: manager, body: overlap(60) });
    await roll(404, LONELY.key, { headers: manager, body: overlap(60) });
    await roll(409, SPARE.key, { headers: manager, body: overlap(60) });
    await roll(413, next, { headers: manager, body: JSON.stringify({ pad: 'x'.repeat(5000) }) });
    await roll(415, next, {
      headers: { ...basic(MANAGER), 'content-type': 'text/plain' },
      body: 'x',
    });
    await roll(503, next, { headers: manager, body: overlap(60) }, storeDown);
  });

  it('answers every documented status of the token exchange', async () => {
    const post = (status: number, options: RequestOptions, on = gateway) =>
      expectStatus(on, 'POST', '/auth/token', status, options);
    const login = (password: string) => JSON.stringify({ username: USER.username, password });
    await post(200, { headers: JSON_TYPE, body: login(USER.password) });
    await post(400, { headers: JSON_TYPE, body: '{"username":1}' });
    await post(413, { headers: JSON_TYPE, body: login('p'.repeat(5000)) });
    await post(415, { headers: { 'content-type': 'text/plain' }, body: login(USER.password) });
    // One failure from an address locks the username there (usernameAddress.threshold 1).
    await post(401, { headers: JSON_TYPE, body: login('wrong'), from: LOCKED_FROM });
    await post(429, { headers: JSON_TYPE, body: login('wrong'), from: LOCKED_FROM });
    await post(503, { headers: JSON_TYPE, body: login(USER.password) }, storeDown);
  });

  it('answers 429 with Retry-After on every authenticated operation once a key is locked out', async () => {
    const wrong = { headers: basic(LOCKED, 'wrong-secret-0123456789abcdef'), from: LOCKED_FROM };
    await expectStatus(gateway, 'GET', '/accounts', 401, wrong);
    const locked = {
      headers: { ...basic(LOCKED), 'x-forwarded-for': LOCKED_FROM },
      from: LOCKED_FROM,
    };
    for (const path of LISTING)
      for (const method of ['GET', 'HEAD']) await expectStatus(gateway, method, path, 429, locked);
    for (const method of ['GET', 'HEAD', 'POST'])
      await expectStatus(gateway, method, '/keys', 429, locked);
    for (const method of ['GET', 'HEAD'])
      await expectStatus(gateway, method, '/keys/events', 429, locked);
    await expectStatus(gateway, 'DELETE', `/keys/${LOCKED.key}`, 429, locked);
    await expectStatus(gateway, 'POST', `/keys/${LOCKED.key}/roll`, 429, locked);
    // The check counts the client the trusted proxy names in X-Forwarded-For; its own
    // method is not read.
    for (const method of METHODS)
      await expectStatus(gateway, method, '/auth/check', 429, {
        headers: {
          ...locked.headers,
          'x-forwarded-method': 'GET',
          'x-forwarded-uri': '/accounts',
        },
      });
    for (const method of ['GET', 'HEAD'])
      await expectStatus(gateway, method, '/auth/check/accounts', 429, { headers: locked.headers });
  });

  it('answers every documented status of the forward-auth check, whatever its own method', async () => {
    const naming = (method: string, uri: string) => ({
      'x-forwarded-method': method,
      'x-forwarded-uri': uri,
    });
    for (const method of METHODS) {
      const check = (
        status: number,
        headers: Record<string, string>,
        from?: string,
        on = gateway,
      ) =>
        expectStatus(on, method, '/auth/check', status, {
          headers,
          ...(from === undefined ? {} : { from }),
        });
      const allowed = await check(200, { ...naming('GET', '/accounts'), ...basic(READER) });
      expect(allowed.headers['x-auth-subject']).toBe(READER.subject);
      await check(400, basic(READER));
      await check(401, naming('GET', '/accounts'));
      await check(403, { ...naming('GET', '/accounts'), ...basic(READER) }, UNTRUSTED_FROM);
      await check(404, { ...naming('GET', '/nowhere'), ...basic(READER) });
      const notTaken = await check(405, { ...naming('POST', '/accounts'), ...basic(READER) });
      expect(notTaken.headers.allow).toBe('GET, HEAD');
      await check(503, { ...naming('GET', '/accounts'), ...basic(READER) }, undefined, storeDown);
    }
  });

  it('answers every documented status of the Envoy form of the check, its method the original', async () => {
    const envoy = (method: string, status: number, path: string, options: RequestOptions = {}) =>
      expectStatus(gateway, method, `/auth/check${path}`, status, options);
    for (const method of ['GET', 'HEAD']) {
      const allowed = await envoy(method, 200, '/accounts', { headers: basic(READER) });
      expect(allowed.headers['x-auth-subject']).toBe(READER.subject);
      await envoy(method, 400, '/accounts', { headers: MALFORMED });
      await envoy(method, 401, '/accounts');
      await envoy(method, 403, '/accounts', { headers: basic(NO_SCOPE) });
      await envoy(method, 403, '/accounts', { headers: basic(READER), from: UNTRUSTED_FROM });
      await envoy(method, 404, '/nowhere', { headers: basic(READER) });
      await expectStatus(storeDown, method, '/auth/check/accounts', 503, {
        headers: basic(READER),
      });
    }
    // A method the route does not take is the route's 405, with its Allow, once the peer is
    // trusted, the request named once and its path a route's.
    for (const method of METHODS.filter((m) => m !== 'GET' && m !== 'HEAD')) {
      const notTaken = await envoy(method, 405, '/accounts', { headers: basic(READER) });
      expect(notTaken.headers.allow).toBe('GET, HEAD');
      expect(notTaken.headers['x-auth-error']).toBe('method_not_allowed');
      await envoy(method, 400, '/accounts', { headers: { 'x-forwarded-method': 'GET' } });
      await envoy(method, 403, '/accounts', { from: UNTRUSTED_FROM });
      await envoy(method, 404, '/nowhere');
    }
  });

  it('serves the JWKS and this document without credentials, with 304 and the address limit', async () => {
    for (const method of ['GET', 'HEAD']) {
      await expectStatus(gateway, method, '/.well-known/jwks.json', 200);
      const document = await expectStatus(gateway, method, '/openapi.json', 200);
      expect(document.headers['content-type']).toBe('application/json; charset=utf-8');
      const etag = document.headers.etag as string;
      await expectStatus(gateway, method, '/openapi.json', 304, {
        headers: { 'if-none-match': etag },
      });
    }
    expect((await send(gateway.url, '/openapi.json')).json).toEqual(readDocument());
    // Two Authorization lines are refused before any route, even where none is needed.
    const twice = { headers: { authorization: [basicHeader(READER.key, SECRET), 'Basic eA=='] } };
    for (const method of ['GET', 'HEAD'])
      for (const path of ['/openapi.json', '/.well-known/jwks.json']) {
        const twoLines = await expectStatus(gateway, method, path, 400, twice);
        if (method === 'GET')
          expect(twoLines.json).toMatchObject({ error: { code: 'malformed_authorization' } });
      }
    // The address limit (40 an hour) is spent from one address.
    let answer: HttpAnswer | undefined;
    for (let i = 0; i < 41 && answer?.status !== 429; i++)
      answer = await send(gateway.url, '/openapi.json', { from: LIMITED_FROM });
    expect(answer?.status).toBe(429);
    for (const method of ['GET', 'HEAD']) {
      await expectStatus(gateway, method, '/openapi.json', 429, { from: LIMITED_FROM });
      await expectStatus(gateway, method, '/.well-known/jwks.json', 429, { from: LIMITED_FROM });
      // The address limit cannot be counted, and rateLimits.onStoreError is closed.
      await expectStatus(storeDown, method, '/openapi.json', 503);
      await expectStatus(storeDown, method, '/.well-known/jwks.json', 503);
    }
  });

  it('answers every method a path does not take with 405 and the Allow of those it takes', async () => {
    for (const { target, taken } of TAKING)
      for (const method of METHODS.filter((m) => !taken.includes(m))) {
        const answer = await expectStatus(gateway, method, target, 405, {
          headers: basic(MANAGER),
        });
        expect(answer.headers.allow).toBe(taken.join(', '));
        // A segment that is no key id is no route's: 404 before the method is read.
        if (target.includes(SPARE.key))
          await expectStatus(gateway, method, target.replace(SPARE.key, 'x'), 404);
      }
  });

  it('refuses on every path and method what is refused before any route: 400, 408, 431', async () => {
    const twoAuthorizations = {
      headers: { authorization: [basicHeader(READER.key, SECRET), 'Basic eA=='] },
    };
    // Host and 100 more: one line past server.maxHeaderCount (100), which the gateway counts
    // itself (Node refuses more lines still, in an answer of its parser's).
    const tooManyLines = Array.from({ length: 100 }, (_, i) => `x-filler-${i}: 1\r\n`).join('');
    for (const target of TARGETS)
      for (const method of METHODS) {
        const twice = await expectStatus(gateway, method, target, 400, twoAuthorizations);
        if (method !== 'HEAD')
          expect(twice.json).toMatchObject({ error: { code: 'malformed_authorization' } });
        const tooLarge = await rawRequest(
          gateway.port,
          `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${tooManyLines}\r\n`,
        );
        expect(tooLarge.status, `${method} ${target}`).toBe(431);
      }
    // A head that stops before its end: server.headersTimeoutMs (300 ms) answers each.
    const unfinished = await Promise.all(
      TARGETS.flatMap((target) =>
        METHODS.map((method) =>
          rawRequest(impatient.port, `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n`),
        ),
      ),
    );
    expect(unfinished.map((answer) => answer.status)).toEqual(unfinished.map(() => 408));
  });

  it('has answered every documented path, method and status, and nothing undocumented', () => {
    expect([...exercised].sort()).toEqual([...documentedAnswers(readDocument())].sort());
  });
});

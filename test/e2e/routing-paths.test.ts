import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError, GENERATED_REQUEST_ID } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { fromFetch } from '../support/http-answer.js';
import { rawRequest } from '../support/raw-request.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('routing');
const KEY = 'ak_routing';
const SECRET = 'routing-secret-0123456789abcdefghijklmn';
const AUTH = basicHeader(KEY, SECRET);

let upstream: EchoUpstream;
let gateway: GatewayProcess;

/** The upstream's answer for this file: a listing that names the request it saw. */
function listing(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({
    result: 'success',
    status: 200,
    meta: { count: 1, limit: 1000, order: 'desc', last_id: 7 },
    data: [{ id: 7, seen: `${req.method ?? ''} ${req.url ?? ''}` }],
  });
  res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'echo' });
  res.end(body);
}

function expectedListing(method: string, url: string): string {
  return JSON.stringify({
    result: 'success',
    status: 200,
    meta: { count: 1, limit: 1000, order: 'desc', last_id: 7 },
    data: [{ id: 7, seen: `${method} ${url}` }],
  });
}

/** A complete request with valid credentials, so only the target decides the outcome. */
function authorized(requestLine: string): string {
  return `${requestLine}\r\nHost: gateway.test\r\nAuthorization: ${AUTH}\r\nConnection: close\r\n\r\n`;
}

function anonymous(requestLine: string): string {
  return `${requestLine}\r\nHost: gateway.test\r\nConnection: close\r\n\r\n`;
}

beforeAll(async () => {
  upstream = await startEchoUpstream();
  upstream.respondWith(listing);
  await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'rita' });
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      config: { logging: { level: 'info' } },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

describe('the listing route', () => {
  const spellings = ['/account', '/accounts', '/accounts/'];

  it.each(spellings)('forwards GET %s to the upstream as /accounts', async (path) => {
    const mark = upstreamMark(upstream);
    const res = await fetch(`${gateway.url}${path}`, { headers: { authorization: AUTH } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-upstream')).toBe('echo');
    expect(await res.text()).toBe(expectedListing('GET', '/accounts'));
    expect(mark.since().map((r) => `${r.method} ${r.url}`)).toEqual(['GET /accounts']);
  });

  it.each(spellings)('forwards HEAD %s to the upstream as /accounts', async (path) => {
    const mark = upstreamMark(upstream);
    const res = await fetch(`${gateway.url}${path}`, {
      method: 'HEAD',
      headers: { authorization: AUTH },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-upstream')).toBe('echo');
    expect(await res.text()).toBe('');
    expect(mark.since().map((r) => `${r.method} ${r.url}`)).toEqual(['HEAD /accounts']);
  });

  const queries = [
    '?b=2&a=1',
    `?x='"<>`,
    '?q=%2e%2e%2F',
    '?a=1&a=2',
    '?path=/../admin',
    '?a=1?b=2',
    '??x',
    '?a=%zz&b=%',
    '?&&',
    '?redirect=http://evil.example/',
  ];
  const cases = spellings.flatMap((path) => queries.map((query) => [path, query] as const));

  it.each(cases)('keeps the query string of %s%s byte for byte', async (path, query) => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, authorized(`GET ${path}${query} HTTP/1.1`));
    expect(res.status).toBe(200);
    expect(res.body).toBe(expectedListing('GET', `/accounts${query}`));
    expect(mark.since().map((r) => r.url)).toEqual([`/accounts${query}`]);
  });

  it('keeps an empty query (a lone ?) byte for byte', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, authorized('GET /accounts? HTTP/1.1'));
    expect(res.status).toBe(200);
    expect(mark.since().map((r) => r.url)).toEqual(['/accounts?']);
  });

  it("returns the upstream's status, headers and body unchanged", async () => {
    upstream.respondWith((_req, res) => {
      res.writeHead(418, { 'content-type': 'text/plain', 'x-upstream': 'teapot' });
      res.end('short and stout\n');
    });
    try {
      const res = await fetch(`${gateway.url}/accounts`, { headers: { authorization: AUTH } });
      expect(res.status).toBe(418);
      expect(res.headers.get('content-type')).toBe('text/plain');
      expect(res.headers.get('x-upstream')).toBe('teapot');
      expect(await res.text()).toBe('short and stout\n');
    } finally {
      upstream.respondWith(listing);
    }
  });

  it('sends the verified identity upstream and never the Authorization header or spoofed identity', async () => {
    const mark = upstreamMark(upstream);
    const res = await fetch(`${gateway.url}/accounts`, {
      headers: {
        authorization: AUTH,
        'x-auth-subject': 'mallory',
        'x-auth-method': 'bearer',
        'x-auth-key': 'ak_mallory',
        'x-auth-admin': 'true',
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    const [seen] = mark.since();
    expect(seen?.headers).toMatchObject({
      'x-auth-subject': 'rita',
      'x-auth-method': 'basic',
      'x-auth-key': KEY,
      'x-request-id': res.headers.get('x-request-id'),
    });
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers['x-auth-admin']).toBeUndefined();
  });
});

describe('absolute-form targets (RFC 9112 §3.2.2)', () => {
  it('routes GET http://other.example/accounts?x=1 like /accounts?x=1, to the gateway’s own upstream and Host', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      authorized('GET http://other.example/accounts?x=1&y=%41 HTTP/1.1'),
    );
    expect(res.status).toBe(200);
    const [seen] = mark.since();
    expect([seen?.url, seen?.headers.host]).toEqual([
      '/accounts?x=1&y=%41',
      new URL(upstream.url).host,
    ]);
  });

  it('answers 404 not_found for an absolute-form path outside the table, before credentials', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      anonymous('GET http://other.example/admin HTTP/1.1'),
    );
    expectGatewayError(res, 'not_found');
    expect(mark.since()).toEqual([]);
  });
});

describe('request targets that could normalize into another path', () => {
  const targets = [
    '/accounts/../admin',
    '/accounts/%2e%2e/admin',
    '/accounts/%2E',
    '/accounts/.',
    '/./accounts',
    '/accounts%2fx',
    '/accounts%2Fx',
    '/accounts%5cx',
    '/accounts\\..\\admin',
    '/accounts\\',
    '/accounts/%00',
    '/accounts%0d%0a',
    '/accounts#fragment',
    '/accounts?a=1#fragment',
    'http://evil.example/accounts/../admin',
    'http://evil.example/accounts#fragment',
    // Spellings an upstream may serve as /accounts: merged slashes, a decoded unreserved
    // byte, a stripped path parameter (RFC 3986 §6.2.2.2; Tomcat, Spring, nginx).
    '/accounts//',
    '//accounts',
    '/acc%6Funts',
    '/accounts;v=1',
    // Not origin-form nor absolute-form: authority-form on a method other than CONNECT, and a
    // relative path (Node's parser refuses both before any handler).
    'other.example:80',
    'accounts',
    'accounts/../admin',
  ];

  it.each(targets)('answers 400 invalid_path for GET %s and forwards nothing', async (target) => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, authorized(`GET ${target} HTTP/1.1`));
    expectGatewayError(res, 'invalid_path');
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(mark.since()).toEqual([]);
  });

  it('answers 404 not_found for OPTIONS * (it names no resource here) and forwards nothing', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, authorized('OPTIONS * HTTP/1.1'));
    expectGatewayError(res, 'not_found');
    expect(mark.since()).toEqual([]);
  });
});

describe('unknown paths', () => {
  const paths = ['/admin', '/Accounts', '/ACCOUNT', '/account/', '/accountsx', '/accounts%20', '/'];

  it.each(paths)('answers 404 not_found for %s before asking for credentials', async (path) => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, anonymous(`GET ${path} HTTP/1.1`));
    expectGatewayError(res, 'not_found');
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(mark.since()).toEqual([]);
  });

  it('answers 404 not_found for an unknown path even with valid credentials', async () => {
    const mark = upstreamMark(upstream);
    const res = await fromFetch(
      await fetch(`${gateway.url}/admin`, { headers: { authorization: AUTH } }),
    );
    expectGatewayError(res, 'not_found');
    expect(mark.since()).toEqual([]);
  });
});

describe('methods the route does not allow', () => {
  it.each([
    ['POST', true],
    ['DELETE', true],
    ['POST', false],
    ['PUT', false],
  ] as const)(
    'answers 405 method_not_allowed with Allow: GET, HEAD for %s /accounts (credentials: %s)',
    async (method, withCredentials) => {
      const mark = upstreamMark(upstream);
      const res = await fromFetch(
        await fetch(`${gateway.url}/accounts`, {
          method,
          headers: withCredentials ? { authorization: AUTH } : {},
        }),
      );
      expectGatewayError(res, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET, HEAD');
      expect(mark.since()).toEqual([]);
    },
  );
});

describe('X-Request-Id', () => {
  it('keeps a well-formed client X-Request-Id on the response and at the upstream', async () => {
    const mark = upstreamMark(upstream);
    const res = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: AUTH, 'x-request-id': 'client-req.42:abc' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('client-req.42:abc');
    expect(mark.since()[0]?.headers['x-request-id']).toBe('client-req.42:abc');
  });

  it('keeps a well-formed client X-Request-Id in an error body', async () => {
    const res = await fromFetch(
      await fetch(`${gateway.url}/nowhere`, { headers: { 'x-request-id': 'trace-0001' } }),
    );
    expectGatewayError(res, 'not_found', { requestId: 'trace-0001' });
  });

  it.each(['has spaces', '<script>', 'x'.repeat(129), 'semi;colon'])(
    'replaces the malformed client X-Request-Id %j with a generated one',
    async (incoming) => {
      const mark = upstreamMark(upstream);
      const res = await fetch(`${gateway.url}/accounts`, {
        headers: { authorization: AUTH, 'x-request-id': incoming },
      });
      expect(res.status).toBe(200);
      const generated = res.headers.get('x-request-id');
      expect(generated).toMatch(GENERATED_REQUEST_ID);
      expect(mark.since()[0]?.headers['x-request-id']).toBe(generated);
    },
  );

  it('gives every response its own generated X-Request-Id when the client sends none', async () => {
    const [a, b] = await Promise.all([
      fetch(`${gateway.url}/accounts`, { headers: { authorization: AUTH } }),
      fetch(`${gateway.url}/accounts`),
    ]);
    expect(a.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(b.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    await Promise.all([a.text(), b.text()]);
  });
});

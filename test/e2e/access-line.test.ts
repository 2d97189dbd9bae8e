import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { untilLog, type LogLine } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { rawRequest } from '../support/raw-request.js';
import { freePort } from '../support/redis-server.js';
import { scrapeMetric } from '../support/scrape-metric.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// The access line (issue 16 point 1) as an operator reads it off the built gateway's log,
// and the upstream metrics moved by the same requests (point 2), on both engines: a proxied
// 200, an upstream's 404, a refused credential, a refused upstream.

const KEY = 'ak_access_line';
const SECRET = 'access-line-secret-0123456789abcdef';
const prefix = uniquePrefix('accessline');
const USER_AGENT = 'probe/1.0 "quoted" \\ and more';

const USER = { username: 'lena-web', subject: 'lena', password: 'lena-web-password-0123' };

let upstream: EchoUpstream;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  upstream.respondWith((req, res) => {
    // Called once the body has been read whole: the last request recorded is this one.
    if (req.method === 'POST') {
      res.end(`received ${upstream.received.at(-1)?.body.length ?? 0} bytes`);
      return;
    }
    const found = req.url?.startsWith('/accounts/missing') !== true;
    res.writeHead(found ? 200 : 404, { 'content-type': 'text/plain' });
    res.end(found ? 'found' : 'no such account');
  });
  await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'lena' });
  await putUser(inject('redisUrl'), prefix, USER);
});

afterAll(async () => {
  await upstream?.close();
});

/** The request's one line: the access line, or the warning that replaces it for a 5xx. */
const lineOf = (gateway: GatewayProcess, requestId: string): Promise<LogLine> =>
  untilLog(
    gateway,
    `the line of ${requestId}`,
    (line) =>
      (line.msg === 'request' || line.msg === 'request failed') && line.request_id === requestId,
  );

describe.each(['http-proxy-3', 'undici'] as const)('the access line, %s engine', (engine) => {
  let gateway: GatewayProcess;
  let run = 0;

  beforeAll(async () => {
    gateway = await startGateway(
      gatewayYaml({
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: {
          // The test connects from 127.0.0.1: as a trusted proxy, its X-Forwarded-For counts.
          server: { trustedProxies: ['127.0.0.1'] },
          upstreams: {
            accounts: { url: upstream.url, engine },
            // Nothing listens there.
            down: { url: `http://127.0.0.1:${await freePort()}`, engine },
          },
          routes: [
            {
              name: 'accounts',
              paths: ['/accounts', '/accounts/'],
              methods: ['GET', 'POST'],
              upstream: 'accounts',
              upstreamPath: '/accounts',
            },
            {
              name: 'account-items',
              prefixes: ['/accounts/'],
              upstream: 'accounts',
              upstreamPath: '/accounts',
            },
            { name: 'down', paths: ['/down'], upstream: 'down', upstreamPath: '/down' },
          ],
          logging: { level: 'info' },
        },
      }),
    );
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  /** Sends one request over its own connection; the bytes both ways, and its line. */
  async function exchange(
    target: string,
    authorization: string,
    body?: string,
  ): Promise<{ status: number; body: string; sent: number; received: number; line: LogLine }> {
    run += 1;
    const requestId = `access-line-${engine}-${run}`;
    const method = body === undefined ? 'GET' : 'POST';
    const framing = body === undefined ? '' : `Content-Length: ${body.length}\r\n`;
    const head =
      `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: ${authorization}\r\n` +
      `User-Agent: ${USER_AGENT}\r\nX-Forwarded-For: 198.51.100.1, 203.0.113.9\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n${framing}\r\n`;
    const bytes = head + (body ?? '');
    const answer = await rawRequest(gateway.port, bytes);
    return {
      status: answer.status,
      body: answer.body,
      sent: Buffer.byteLength(bytes, 'latin1'),
      received: Buffer.byteLength(answer.raw, 'latin1'),
      line: await lineOf(gateway, requestId),
    };
  }

  const good = basicHeader(KEY, SECRET);

  /** What `action` added to each of `series` on the gateway's /metrics, and its result. */
  async function moving<T>(
    series: readonly string[],
    action: () => Promise<T>,
  ): Promise<{ result: T; moved: number[] }> {
    const read = () => Promise.all(series.map((name) => scrapeMetric(gateway, name)));
    const before = await read();
    const result = await action();
    return { result, moved: (await read()).map((after, i) => after - (before[i] ?? 0)) };
  }

  it('writes path without query, client address, user agent, bytes and the upstream status and time of a proxied 200', async () => {
    const { status, sent, received, line } = await exchange('/accounts?token=hidden', good);
    expect(status).toBe(200);
    expect(line).toMatchObject({
      msg: 'request',
      method: 'GET',
      path: '/accounts',
      route: 'accounts',
      status: 200,
      client_address: '203.0.113.9',
      user_agent: USER_AGENT,
      bytes_in: sent,
      bytes_out: received,
      upstream_status: 200,
      auth_method: 'basic',
      subject: 'lena',
      key: KEY,
    });
    expect(line.upstream_ms).toBeTypeOf('number');
    expect(line.upstream_ms as number).toBeLessThanOrEqual(line.duration_ms as number);
    expect(JSON.stringify(line)).not.toMatch(/hidden|authorization|Basic /i);
  });

  it('forwards a request body, counts it in bytes_in and stays up for the next request', async () => {
    const body = 'x'.repeat(1000);
    const posted = await exchange('/accounts', good, body);
    expect([posted.status, posted.body]).toEqual([200, 'received 1000 bytes']);
    expect(posted.line).toMatchObject({ method: 'POST', status: 200, bytes_in: posted.sent });
    // undici sets req.socket to null once it has consumed the body: this crashed the process.
    const next = await exchange('/accounts', good);
    expect([next.status, next.line.status]).toEqual([200, 200]);
    expect(gateway.child.exitCode).toBeNull();
  });

  it("writes the upstream's 404 as its status, counted with source upstream", async () => {
    const series = 'gateway_requests_total{route="account-items",status="404",source="upstream"}';
    const { result, moved } = await moving([series], () => exchange('/accounts/missing', good));
    const { status, line } = result;
    expect([status, line.status, line.upstream_status, line.path]).toEqual([
      404,
      404,
      404,
      '/accounts/missing',
    ]);
    expect(line).not.toHaveProperty('error_code');
    expect(moved).toEqual([1]);
  });

  it('writes the reason a credential was refused, with no upstream fields, counted with source gateway', async () => {
    const series = 'gateway_requests_total{route="accounts",status="401",source="gateway"}';
    const { result, moved } = await moving([series], () =>
      exchange('/accounts', basicHeader(KEY, 'wrong-secret-0000')),
    );
    const { status, line } = result;
    expect(status).toBe(401);
    expect(line).toMatchObject({
      msg: 'request',
      status: 401,
      auth_failure: 'invalid_credentials',
      error_code: 'invalid_credentials',
      client_address: '203.0.113.9',
    });
    expect(['upstream_status', 'upstream_ms', 'subject'].filter((f) => f in line)).toEqual([]);
    expect(moved).toEqual([1]);
  });

  it('writes the reason a password was refused on POST /auth/token, for a wrong password and an unknown user', async () => {
    const lines: LogLine[] = [];
    for (const username of [USER.username, 'nobody-by-this-name']) {
      run += 1;
      const requestId = `access-line-token-${engine}-${run}`;
      const answer = await send(gateway.url, '/auth/token', {
        method: 'POST',
        headers: { ...JSON_TYPE, 'x-request-id': requestId },
        body: JSON.stringify({ username, password: 'not-the-password' }),
      });
      expect(answer.status).toBe(401);
      lines.push(await lineOf(gateway, requestId));
    }
    for (const line of lines)
      expect(line).toMatchObject({
        msg: 'request',
        route: 'token',
        status: 401,
        auth_failure: 'invalid_credentials',
        error_code: 'invalid_credentials',
      });
  });

  it('writes the error kind of a refused upstream and counts it', async () => {
    const errors = 'gateway_upstream_errors_total{upstream="down",kind="connect_refused"}';
    const answered = 'gateway_requests_total{route="down",status="502",source="gateway"}';
    const { result, moved } = await moving([errors, answered], () => exchange('/down', good));
    const { status, line } = result;
    expect(status).toBe(502);
    expect(line).toMatchObject({
      msg: 'request failed',
      status: 502,
      path: '/down',
      error_code: 'upstream_unavailable',
      upstream_error: 'connect_refused',
      user_agent: USER_AGENT,
    });
    expect(line).not.toHaveProperty('upstream_status');
    expect(moved).toEqual([1, 1]);
  });

  it.each([
    [
      'a NUL in a header value',
      'GET /accounts HTTP/1.1\r\nHost: x\r\nUser-Agent: a\x00b\r\n\r\n',
      'bad_request',
    ],
    [
      'bytes over 0x7F in the target',
      'GET /accounts/\xff\xc3 HTTP/1.1\r\nHost: x\r\n\r\n',
      'invalid_path',
    ],
  ])(
    "counts and logs a request Node's parser refused, with %s, as a 400 of route none",
    async (_what, head, code) => {
      const series = 'gateway_requests_total{route="none",status="400",source="gateway"}';
      const { result: answer, moved } = await moving([series], () =>
        rawRequest(gateway.port, head),
      );
      expect(answer.status).toBe(400);
      const requestId = answer.headers['x-request-id'];
      expect(requestId).toBeTypeOf('string');
      const line = await lineOf(gateway, requestId as string);
      // The head did not parse: no method, path or user agent, the peer's address.
      expect(line).toMatchObject({
        msg: 'request',
        method: '',
        path: '',
        route: 'none',
        status: 400,
        client_address: '127.0.0.1',
        bytes_in: Buffer.byteLength(head, 'latin1'),
        bytes_out: Buffer.byteLength(answer.raw, 'latin1'),
        error_code: code,
      });
      expect(line).not.toHaveProperty('user_agent');
      expect(moved).toEqual([1]);
      expect(gateway.child.exitCode).toBeNull();
    },
  );

  it.each([
    ['401 on /accounts without credentials', '/accounts', 401, 'accounts'],
    ['200 on /openapi.json', '/openapi.json', 200, 'openapi'],
  ])(
    'answers and logs a request with an unknown expectation as any other: %s',
    async (_what, target, status, route) => {
      run += 1;
      const requestId = `access-line-${engine}-expect-${run}`;
      const answer = await rawRequest(
        gateway.port,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer.status).toBe(status);
      expect(answer.headers['x-request-id']).toBe(requestId);
      expect(answer.raw).not.toContain('100 Continue');
      expect(await lineOf(gateway, requestId)).toMatchObject({ msg: 'request', route, status });
    },
  );

  it('answers, counts and logs CONNECT as a 400 invalid_path of route none', async () => {
    const series = 'gateway_requests_total{route="none",status="400",source="gateway"}';
    const requestId = `access-line-${engine}-connect`;
    const { result: answer, moved } = await moving([series], () =>
      rawRequest(
        gateway.port,
        `CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\nX-Request-Id: ${requestId}\r\n\r\n`,
      ),
    );
    expectGatewayError(answer, 'invalid_path', { requestId });
    expect(answer.headers.connection).toBe('close');
    expect(await lineOf(gateway, requestId)).toMatchObject({
      msg: 'request',
      route: 'none',
      status: 400,
      error_code: 'invalid_path',
    });
    expect(moved).toEqual([1]);
  });

  it("times the upstream's responses in its histogram", async () => {
    const count = 'gateway_upstream_request_duration_seconds_count{upstream="accounts"}';
    const { moved } = await moving([count], () => exchange('/accounts', good));
    expect(moved).toEqual([1]);
  });
});

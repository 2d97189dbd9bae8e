import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError, GENERATED_REQUEST_ID } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { finalStatuses, rawRequest } from '../support/raw-request.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('framing');
const KEY = 'ak_framing';
const SECRET = 'framing-secret-0123456789abcdefghijklmn';
const AUTH = `Authorization: ${basicHeader(KEY, SECRET)}\r\n`;
const MAX_HEADER_COUNT = 100;

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'fran' });
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      config: { server: { maxHeaderCount: MAX_HEADER_COUNT }, logging: { level: 'info' } },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

/** `count` header lines in all: Host, Authorization, Connection and fillers. */
function requestWithHeaderLines(count: number, authorizationLast = false): string {
  const fillers = Array.from({ length: count - 3 }, (_, i) => `X-Filler-${i}: ${i}\r\n`).join('');
  return authorizationLast
    ? `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\n${fillers}${AUTH}\r\n`
    : `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Connection: close\r\n${fillers}\r\n`;
}

describe('a well-framed request', () => {
  it(`is forwarded with exactly server.maxHeaderCount (${MAX_HEADER_COUNT}) header lines`, async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, requestWithHeaderLines(MAX_HEADER_COUNT));
    expect(res.status).toBe(200);
    expect(mark.since().map((r) => r.url)).toEqual(['/accounts']);
  });

  it('is forwarded with Content-Length: 0 on GET', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(200);
    expect(mark.since()).toHaveLength(1);
  });
});

describe('requests whose framing is refused even with valid credentials', () => {
  const badRequests: [string, string][] = [
    [
      'two Host lines',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nHost: evil.example\r\n${AUTH}Connection: close\r\n\r\n`,
    ],
    [
      'Transfer-Encoding on an HTTP/1.0 GET',
      `GET /accounts HTTP/1.0\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'Transfer-Encoding on an HTTP/1.0 POST (refused before the 405)',
      `POST /accounts HTTP/1.0\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    ],
    [
      'Transfer-Encoding: ,chunked on GET',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: ,chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    ],
    [
      'Transfer-Encoding: ,chunked on POST (refused before the 405)',
      `POST /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: ,chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    ],
    [
      'Transfer-Encoding: chunked on GET',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    ],
    [
      'Content-Length: 5 with a body on GET',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
    ],
    ['a request line with no HTTP version', `GET /accounts\r\n${AUTH}\r\n`],
    // What Node's own parser refuses reaches the client in the same envelope.
    [
      'two different Content-Length values',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 0\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`,
    ],
    [
      'Content-Length and Transfer-Encoding together',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    ],
    [
      'an obs-folded header line',
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}X-Folded: a\r\n b\r\nConnection: close\r\n\r\n`,
    ],
  ];

  it.each(badRequests)(
    'answers 400 bad_request for %s and forwards nothing',
    async (_what, bytes) => {
      const mark = upstreamMark(upstream);
      const res = await rawRequest(gateway.port, bytes);
      expectGatewayError(res, 'bad_request');
      expect(mark.since()).toEqual([]);
    },
  );

  it("answers HTTP/1.1 without Host with the gateway's bad_request envelope, not Node's bare 400", async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      `GET /accounts HTTP/1.1\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    expectGatewayError(res, 'bad_request');
    expect(mark.since()).toEqual([]);
  });

  it('refuses a request without credentials before sending 100 Continue', async () => {
    const res = await rawRequest(
      gateway.port,
      'GET /accounts HTTP/1.1\r\nHost: gateway.test\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
    );
    expectGatewayError(res, 'missing_credentials');
    expect(res.raw).not.toContain('100 Continue');
  });

  it('forwards a request with an unknown expectation without sending it 100 Continue', async () => {
    const res = await rawRequest(
      gateway.port,
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Expect: foo\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(200);
    expect(res.raw).not.toContain('100 Continue');
  });

  it('answers 400 bad_request, headers only, for Content-Length: 5 with a body on HEAD', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      `HEAD /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
    );
    expect(res.status).toBe(400);
    expect(res.headers).toMatchObject({
      'cache-control': 'no-store',
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.headers['x-request-id']).toMatch(GENERATED_REQUEST_ID);
    expect(res.body).toBe('');
    expect(mark.since()).toEqual([]);
  });

  it(`answers 431 headers_too_large for ${MAX_HEADER_COUNT + 1} header lines and forwards nothing`, async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, requestWithHeaderLines(MAX_HEADER_COUNT + 1));
    expectGatewayError(res, 'headers_too_large');
    expect(mark.since()).toEqual([]);
  });

  it('answers 431 headers_too_large, not 401, when Authorization comes after 150 header lines', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, requestWithHeaderLines(150, true));
    expectGatewayError(res, 'headers_too_large');
    expect(mark.since()).toEqual([]);
  });

  it('answers 431 headers_too_large for 1,200 header lines, past Node’s own line limit', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(gateway.port, requestWithHeaderLines(1_200, true));
    expectGatewayError(res, 'headers_too_large');
    expect(mark.since()).toEqual([]);
  });

  it('answers 431 headers_too_large for a header block over 16 KiB', async () => {
    const mark = upstreamMark(upstream);
    const res = await rawRequest(
      gateway.port,
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}X-Big: ${'b'.repeat(17 * 1024)}\r\nConnection: close\r\n\r\n`,
    );
    expectGatewayError(res, 'headers_too_large');
    expect(mark.since()).toEqual([]);
  });
});

describe('one response per request', () => {
  /** Every final response until the gateway closes the connection. */
  async function answersUntilClosed(bytes: string): Promise<number[]> {
    const { raw, closedByServer } = await rawRequest(gateway.port, bytes, { untilClosed: true });
    expect(closedByServer).toBe(true);
    return finalStatuses(raw);
  }

  it('answers Transfer-Encoding: xchunked with one 400, not a second from the parser', async () => {
    const mark = upstreamMark(upstream);
    const statuses = await answersUntilClosed(
      `POST /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: xchunked\r\n\r\n`,
    );
    expect(statuses).toEqual([400]);
    expect(mark.since()).toEqual([]);
  });

  it('answers 401 once when the chunked body after the refused head does not parse', async () => {
    const statuses = await answersUntilClosed(
      'POST /keys HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    );
    expect(statuses).toEqual([401]);
  });

  it('answers 413 once and closes when the body is left unread', async () => {
    const statuses = await answersUntilClosed(
      `POST /keys HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"label":`,
    );
    expect(statuses).toEqual([413]);
  });

  it('answers a forwarded request, then 400 for the unparseable one pipelined after it', async () => {
    const mark = upstreamMark(upstream);
    const statuses = await answersUntilClosed(
      `GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}\r\nNOT HTTP\r\n\r\n`,
    );
    expect(statuses).toEqual([200, 400]);
    expect(mark.since().map((r) => r.url)).toEqual(['/accounts']);
  });

  it('answers both when a request whose body breaks is pipelined behind another in one write', async () => {
    const statuses = await answersUntilClosed(
      'GET /.well-known/jwks.json HTTP/1.1\r\nHost: gateway.test\r\n\r\n' +
        `POST /keys HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Transfer-Encoding: xchunked\r\n\r\n`,
    );
    expect(statuses).toEqual([200, 400]);
  });

  it('answers both when a refused request with a broken chunked body is pipelined behind another', async () => {
    const statuses = await answersUntilClosed(
      'GET /.well-known/jwks.json HTTP/1.1\r\nHost: gateway.test\r\n\r\n' +
        'POST /keys HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    );
    expect(statuses).toEqual([200, 401]);
  });
});

import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ErrorCode } from '../../src/errors/error-codes.js';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError, GENERATED_REQUEST_ID } from '../support/expect-gateway-error.js';
import { untilLog, type LogLine } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { openIdleConnection } from '../support/idle-connection.js';
import { fromFetch } from '../support/http-answer.js';
import { rawRequest } from '../support/raw-request.js';
import { startRawUpstream, type RawUpstream } from '../support/raw-upstream.js';
import { freePort } from '../support/redis-server.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// How the gateway answers when the upstream misbehaves (design.md "Forwarding": refused or
// reset -> 502, past the timeout -> 504, a reset after the response started -> a visibly
// cut response), that a well-behaved upstream's answer streams back unchanged, and that
// the gateway keeps its connections to the upstream alive.

const prefix = uniquePrefix('upstreamerr');
const KEY = 'ak_upstream_errors';
const SECRET = 's3cret-upstream-errors';
const AUTHORIZATION = basicHeader(KEY, SECRET);
const TIMEOUT_MS = 300;

/** Answers normally; tests replace its answer with respondWith. */
let echo: EchoUpstream;
/** Reads the request and never answers. */
let silent: EchoUpstream;
let garbage: RawUpstream;
let reset: RawUpstream;
let partial: RawUpstream;
let chunked: RawUpstream;
/** Records the upstream-side socket of each request it answers. */
let sockets: SocketRecordingUpstream;
let gateway: GatewayProcess;

interface SocketRecordingUpstream {
  readonly url: string;
  /** The gateway's port and Connection header, per request received. */
  readonly received: { readonly remotePort: number | undefined; readonly connection?: string }[];
  close(): Promise<void>;
}

async function startSocketRecordingUpstream(): Promise<SocketRecordingUpstream> {
  const received: SocketRecordingUpstream['received'] = [];
  const server = createHttpServer((req, res) => {
    received.push({
      remotePort: req.socket.remotePort,
      ...(req.headers.connection === undefined ? {} : { connection: req.headers.connection }),
    });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const PARTIAL_HEAD =
  'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n';
const PARTIAL_BODY = '{"result":"success","status":200,"da';
const CHUNKED_HEAD =
  'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n';
const FIRST_CHUNK = '5\r\nhello\r\n';

beforeAll(async () => {
  const closedPort = await freePort();
  [echo, silent, garbage, reset, partial, chunked, sockets] = await Promise.all([
    startEchoUpstream(),
    startEchoUpstream(),
    startRawUpstream((socket) => socket.end('garbage\r\n\r\n')),
    startRawUpstream((socket) => socket.destroy()),
    startRawUpstream((socket) => socket.write(PARTIAL_HEAD + PARTIAL_BODY, () => socket.destroy())),
    startRawUpstream((socket) => socket.write(CHUNKED_HEAD + FIRST_CHUNK, () => socket.destroy())),
    startSocketRecordingUpstream(),
  ]);
  silent.respondWith(() => {
    // Never answers: the gateway's own timer must end the exchange.
  });
  await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
  const others = { echo, garbage, reset, partial, chunked, sockets };
  gateway = await startGateway(
    gatewayYaml({
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      config: {
        admin: { enabled: false },
        upstreams: {
          accounts: { url: silent.url, timeoutMs: TIMEOUT_MS },
          refused: { url: `http://127.0.0.1:${closedPort}` },
          ...Object.fromEntries(Object.entries(others).map(([name, u]) => [name, { url: u.url }])),
        },
        routes: [
          {
            name: 'accounts',
            paths: ['/account', '/accounts', '/accounts/'],
            upstream: 'accounts',
            upstreamPath: '/accounts',
          },
          ...['echo', 'refused', 'garbage', 'reset', 'partial', 'chunked', 'sockets'].map(
            (name) => ({ name, paths: [`/${name}`], upstream: name, upstreamPath: '/accounts' }),
          ),
        ],
        logging: { level: 'info' },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all(
    [echo, silent, garbage, reset, partial, chunked, sockets].map((u) => u?.close()),
  );
});

function get(path: string, requestId?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: AUTHORIZATION };
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  return fetch(`${gateway.url}${path}`, { headers });
}

/** The whole error envelope, with the message pinned here too, for a fetch response. */
async function expectEnvelope(
  res: Response,
  status: number,
  code: ErrorCode,
  message: string,
): Promise<void> {
  const answer = await fromFetch(res);
  expect(answer.status).toBe(status);
  expectGatewayError(answer, code, { message });
}

/** The warning a failed request logs instead of its access line. */
const failedLine = (requestId: string): Promise<LogLine> =>
  untilLog(
    gateway,
    `the warning of ${requestId}`,
    (line) => line.msg === 'request failed' && line.request_id === requestId,
  );

/** One request over a raw socket, read until the gateway closes the connection. */
function rawUntilClose(port: number, bytes: string) {
  return rawRequest(port, bytes, { untilClosed: true });
}

describe('when the upstream fails before answering', () => {
  it('answers 502 upstream_unavailable when the upstream refuses the connection', async () => {
    await expectEnvelope(
      await get('/refused'),
      502,
      'upstream_unavailable',
      'The upstream service is unavailable.',
    );
  });

  it("keeps the client's X-Request-Id in the 502 envelope", async () => {
    const res = await get('/refused', 'client-chosen-id-502');
    expect(res.headers.get('x-request-id')).toBe('client-chosen-id-502');
    expect(await res.json()).toEqual({
      result: 'error',
      status: 502,
      error: { code: 'upstream_unavailable', message: 'The upstream service is unavailable.' },
      request_id: 'client-chosen-id-502',
    });
  });

  // The upstream never answers, so only the gateway's timer can end the request: no sooner
  // than timeoutMs, and long before an idle connection opened just before is closed at
  // server.keepAliveTimeoutMs (5 s) — which the default timeoutMs (10 s) would not be.
  it('answers 504 upstream_timeout once upstreams.accounts.timeoutMs has passed, long before keepAliveTimeoutMs, when the upstream never answers', async () => {
    const received = silent.received.length;
    const idle = await openIdleConnection(gateway.port);
    const started = performance.now();
    const res = await get('/accounts');
    const elapsedMs = performance.now() - started;
    const idleClosedBefore = idle.closed();
    idle.destroy();
    await expectEnvelope(
      res,
      504,
      'upstream_timeout',
      'The upstream service did not answer in time.',
    );
    // The upstream did get the request: this is a timeout, not a refusal.
    expect(silent.received.length).toBe(received + 1);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(idleClosedBefore).toBe(false);
  });

  it("logs the 504 with the gateway's own timeout as its cause, not a reset", async () => {
    const res = await get('/accounts', 'timeout-cause-1');
    expect(res.status).toBe(504);
    await res.arrayBuffer();
    const line = await failedLine('timeout-cause-1');
    expect(line).toMatchObject({ upstream_error: 'timeout', error_code: 'upstream_timeout' });
    // http-proxy-3 reports its proxy timer as ECONNRESET "socket hang up".
    expect(line.cause).toMatch(/timeout/i);
    expect(line.cause).not.toMatch(/hang up|ECONNRESET/);
  });

  it('answers 502 upstream_unavailable when the upstream replies with garbage bytes', async () => {
    await expectEnvelope(
      await get('/garbage'),
      502,
      'upstream_unavailable',
      'The upstream service is unavailable.',
    );
  });

  it('answers 502 upstream_unavailable when the upstream resets the connection before its headers', async () => {
    await expectEnvelope(
      await get('/reset'),
      502,
      'upstream_unavailable',
      'The upstream service is unavailable.',
    );
  });

  it('still serves normal requests after upstream failures', async () => {
    const res = await get('/echo');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(ECHO_BODY);
  });
});

describe('when the upstream fails after its headers', () => {
  it('makes a fetch body read fail instead of ending the response cleanly', async () => {
    const res = await get('/partial');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe('1000');
    await expect(res.text()).rejects.toThrow();
  });

  it('logs a response cut after its head as a warning with upstream_error, aborted and the cause, without an error_code', async () => {
    const res = await get('/partial', 'cut-line-1');
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    const line = await failedLine('cut-line-1');
    expect(line).toMatchObject({
      level: 40,
      status: 200,
      upstream_status: 200,
      upstream_error: 'reset',
      aborted: true,
    });
    expect(line.cause).toBeTypeOf('string');
    // No envelope was sent: the client got the upstream's 200 head and a cut body.
    expect(line).not.toHaveProperty('error_code');
  });

  it('closes a raw connection before Content-Length bytes have arrived', async () => {
    const result = await rawUntilClose(
      gateway.port,
      ['GET /partial HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${AUTHORIZATION}`, '', ''].join(
        '\r\n',
      ),
    );
    expect(result.closedByServer).toBe(true);
    expect(result.raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.headers['content-length']).toBe('1000');
    expect(result.complete).toBe(false);
    expect(result.body.length).toBeLessThan(1000);
    expect(result.body).toBe(PARTIAL_BODY);
  });

  it('cuts a chunked response without its last chunk when the upstream resets mid-body', async () => {
    const result = await rawUntilClose(
      gateway.port,
      ['GET /chunked HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${AUTHORIZATION}`, '', ''].join(
        '\r\n',
      ),
    );
    expect(result.closedByServer).toBe(true);
    expect(result.raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.headers['transfer-encoding']).toBe('chunked');
    // What arrived is the first chunk and nothing more: no terminating `0\r\n\r\n`, so the
    // client cannot take the cut body for a complete one (RFC 9112 §7.1).
    expect(result.raw.slice(result.raw.indexOf('\r\n\r\n') + 4)).toBe(FIRST_CHUNK);
    expect([result.complete, result.body]).toEqual([false, 'hello']);
  });
});

describe('the connection to the upstream', () => {
  it('sends sequential requests over one kept-alive upstream connection', async () => {
    for (const requestId of ['keepalive-1', 'keepalive-2']) {
      const res = await get('/sockets', requestId);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('ok');
    }
    expect(sockets.received).toHaveLength(2);
    const [first, second] = sockets.received;
    expect(first?.remotePort).toBeTypeOf('number');
    expect(second?.remotePort).toBe(first?.remotePort);
    // http-proxy-3 on its own (agent: false) would send `Connection: close` every time.
    for (const { connection } of sockets.received) expect(connection).not.toMatch(/close/i);
  });
});

describe("the upstream's own response", () => {
  it("streams status, headers and body back unchanged with the gateway's X-Request-Id", async () => {
    let releaseRest: () => void = () => undefined;
    const restReleased = new Promise<void>((resolve) => {
      releaseRest = resolve;
    });
    echo.respondWith((_req, res) => {
      res.writeHead(418, {
        'content-type': 'text/plain; charset=utf-8',
        'x-upstream': '1',
        'x-request-id': 'made-up-by-upstream',
      });
      res.write('I am a teapot, ');
      // The rest is only sent once the client has read the first part: proof of streaming.
      void restReleased.then(() => res.end('short and stout.'));
    });
    try {
      const res = await get('/echo', 'teapot-request-1');
      expect(res.status).toBe(418);
      expect(res.headers.get('x-upstream')).toBe('1');
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(res.headers.get('x-request-id')).toBe('teapot-request-1');
      expect(echo.received.at(-1)?.headers['x-request-id']).toBe('teapot-request-1');
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      const first = await reader.read();
      let text = decoder.decode(first.value, { stream: true });
      expect(text).toBe('I am a teapot, ');
      releaseRest();
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        text += decoder.decode(next.value, { stream: true });
      }
      expect(text).toBe('I am a teapot, short and stout.');
    } finally {
      releaseRest();
    }
  });

  it("passes an upstream's own 503 through unchanged instead of replacing it", async () => {
    const body = JSON.stringify({ upstream: 'maintenance', retry: true });
    echo.respondWith((_req, res) => {
      res.writeHead(503, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'retry-after': '7',
      });
      res.end(body);
    });
    const res = await get('/echo');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(await res.text()).toBe(body);
  });

  it("drops the response headers that the upstream's Connection header names", async () => {
    const body = 'hop';
    echo.respondWith((_req, res) => {
      res.writeHead(200, {
        connection: 'keep-alive, x-hop',
        'x-hop': '1',
        'x-end-to-end': '1',
        'content-type': 'text/plain',
        'content-length': String(body.length),
      });
      res.end(body);
    });
    const res = await rawRequest(
      gateway.port,
      [
        'GET /echo HTTP/1.1',
        'Host: 127.0.0.1',
        `Authorization: ${AUTHORIZATION}`,
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
    );
    expect(res.status).toBe(200);
    expect(res.body).toBe(body);
    expect(res.headers['x-hop']).toBeUndefined();
    expect(res.headers['x-end-to-end']).toBe('1');
    expect(res.headers.connection).toBe('close');
  });
});

import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/redis-server.js';
import { rawRequest } from './raw-http.js';
import { basicHeader, seedKey, uniquePrefix } from '../support/seed-redis.js';

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

interface RawUpstream {
  readonly url: string;
  close(): Promise<void>;
}

/** A TCP server that answers each request's first bytes with `onRequest(socket)`. */
async function startRawUpstream(onRequest: (socket: Socket) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.once('data', () => onRequest(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

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
  const route = (name: string): string => `
  - name: ${name}
    paths: [/${name}]
    upstream: ${name}
    upstreamPath: /accounts`;
  gateway = await startGateway(`
admin: { enabled: false }
upstreams:
  accounts: { url: ${silent.url}, timeoutMs: ${TIMEOUT_MS} }
  echo: { url: ${echo.url} }
  refused: { url: http://127.0.0.1:${closedPort} }
  garbage: { url: ${garbage.url} }
  reset: { url: ${reset.url} }
  partial: { url: ${partial.url} }
  chunked: { url: ${chunked.url} }
  sockets: { url: ${sockets.url} }
routes:
  - name: accounts
    paths: [/account, /accounts, /accounts/]
    upstream: accounts
    upstreamPath: /accounts${['echo', 'refused', 'garbage', 'reset', 'partial', 'chunked', 'sockets'].map(route).join('')}
credentials:
  store: redis
  redis: { url: ${inject('redisUrl')}, keyPrefix: "${prefix}" }
logging: { level: info }
`);
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

/** Asserts the whole error envelope, and that its request id is the response's. */
async function expectEnvelope(
  res: Response,
  status: number,
  code: string,
  message: string,
): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  const requestId = res.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  expect(await res.json()).toEqual({
    result: 'error',
    status,
    error: { code, message },
    request_id: requestId,
  });
}

interface RawResult {
  readonly head: string;
  readonly body: Buffer;
}

/** One request over a raw socket; resolves when the gateway closes the connection. */
function rawUntilClose(port: number, bytes: string): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const done = (): void => {
      if (settled) return;
      settled = true;
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      resolve({
        head: end === -1 ? all.toString('latin1') : all.subarray(0, end).toString('latin1'),
        body: end === -1 ? Buffer.alloc(0) : all.subarray(end + 4),
      });
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', done);
    socket.on('close', done);
    socket.write(bytes);
  });
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

  it('answers 504 upstream_timeout after about upstreams.accounts.timeoutMs when the upstream never answers', async () => {
    const received = silent.received.length;
    const started = performance.now();
    const res = await get('/accounts');
    const elapsedMs = performance.now() - started;
    await expectEnvelope(
      res,
      504,
      'upstream_timeout',
      'The upstream service did not answer in time.',
    );
    // The upstream did get the request: this is a timeout, not a refusal.
    expect(silent.received.length).toBe(received + 1);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1_500);
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
    expect(await res.json()).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 0, limit: 1000, order: 'desc', last_id: null },
      data: [],
    });
  });
});

describe('when the upstream fails after its headers', () => {
  it('makes a fetch body read fail instead of ending the response cleanly', async () => {
    const res = await get('/partial');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe('1000');
    await expect(res.text()).rejects.toThrow();
  });

  it('closes a raw connection before Content-Length bytes have arrived', async () => {
    const result = await rawUntilClose(
      gateway.port,
      ['GET /partial HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${AUTHORIZATION}`, '', ''].join(
        '\r\n',
      ),
    );
    expect(result.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.head.toLowerCase()).toContain('content-length: 1000');
    expect(result.body.length).toBeLessThan(1000);
    expect(result.body.toString()).toBe(PARTIAL_BODY);
  });

  it('cuts a chunked response without its last chunk when the upstream resets mid-body', async () => {
    const result = await rawUntilClose(
      gateway.port,
      ['GET /chunked HTTP/1.1', 'Host: 127.0.0.1', `Authorization: ${AUTHORIZATION}`, '', ''].join(
        '\r\n',
      ),
    );
    expect(result.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.head.toLowerCase()).toContain('transfer-encoding: chunked');
    // What arrived is the first chunk and nothing more: no terminating `0\r\n\r\n`, so the
    // client cannot take the cut body for a complete one (RFC 9112 §7.1).
    expect(result.body.toString('latin1')).toBe(FIRST_CHUNK);
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
    expect(res.headers.get('x-request-id')).toBeTruthy();
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

import type { ServerResponse } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../../src/errors/error-codes.js';
import { createGatewayServer, type GatewayServer } from '../../../src/http/create-server.js';
import { createTestCa, LOOPBACK } from '../../support/certificates.js';
import { finalStatuses, rawRequest } from '../../support/raw-request.js';

const LIMITS = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 5_000,
  keepAliveTimeoutMs: 1_000,
  maxHeaderCount: 50,
};

/** The server a test started, closed after it. */
let api: GatewayServer | undefined;

afterEach(async () => {
  const server = api?.server;
  api = undefined;
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the API server’s in-flight count', () => {
  /** A server that holds every request; `arrived` yields each held response in turn. */
  async function holdingServer(): Promise<{
    port: number;
    arrived: () => Promise<ServerResponse>;
  }> {
    const waiting: ((res: ServerResponse) => void)[] = [];
    const pending: ServerResponse[] = [];
    api = createGatewayServer((_req, res) => {
      const next = waiting.shift();
      if (next === undefined) pending.push(res);
      else next(res);
    }, LIMITS);
    const { server } = api;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      arrived: () => {
        const res = pending.shift();
        return res === undefined
          ? new Promise((resolve) => waiting.push(resolve))
          : Promise.resolve(res);
      },
    };
  }

  function get(port: number): { done: Promise<void>; abort: () => void } {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false });
    const done = new Promise<void>((resolve) => {
      req.on('response', (res) => res.resume().on('end', () => resolve()));
      req.on('error', () => resolve());
    });
    req.end();
    return { done, abort: () => req.destroy() };
  }

  const closed = (res: ServerResponse): Promise<void> =>
    new Promise((resolve) =>
      res.writableFinished || res.destroyed ? resolve() : res.once('close', resolve),
    );

  it('counts requests until their response ends or their client goes away', async () => {
    const { port, arrived } = await holdingServer();
    expect(api?.inFlight()).toBe(0);
    const first = get(port);
    const second = get(port);
    const [a, b] = [await arrived(), await arrived()];
    expect(api?.inFlight()).toBe(2);

    a.end('ok');
    await first.done;
    await closed(a);
    expect(api?.inFlight()).toBe(1);

    second.abort();
    await closed(b);
    expect(api?.inFlight()).toBe(0);
  });
});

describe('the API server answers every request once', () => {
  /** A server whose handler is `handler`, on port 0. */
  async function serving(
    handler: (res: ServerResponse) => void,
    limits: Partial<typeof LIMITS> = {},
  ): Promise<number> {
    api = createGatewayServer((_req, res) => handler(res), { ...LIMITS, ...limits });
    const { server } = api;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  const answer401 = (res: ServerResponse): void => {
    res.writeHead(401, { 'content-length': '2' });
    res.end('no');
  };

  it.each([
    [
      'whose chunked body then fails to parse',
      'POST /keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ],
    [
      'whose body never arrives in time',
      'POST /keys HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab',
    ],
  ])('sends nothing after an answered request %s', async (_what, bytes) => {
    const port = await serving(answer401, { requestTimeoutMs: 300, headersTimeoutMs: 300 });
    const { raw, closedByServer } = await rawRequest(port, bytes, { untilClosed: true });
    expect(finalStatuses(raw)).toEqual([401]);
    expect(closedByServer).toBe(true);
  });

  it('answers 400 through the pending response when its body breaks, and drops the late answer', async () => {
    let late: ServerResponse | undefined;
    const port = await serving((res) => (late = res));
    const { raw, closedByServer } = await rawRequest(
      port,
      'POST /keys HTTP/1.1\r\nHost: x\r\nX-Request-Id: broken-body\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      { untilClosed: true },
    );
    expect(finalStatuses(raw)).toEqual([400]);
    expect(raw).toContain('x-request-id: broken-body');
    expect(closedByServer).toBe(true);
    // The handler's own answer comes too late to be a second response.
    expect(late?.headersSent).toBe(true);
  });

  it('answers a pipelined request first, then 400 for the unparseable one after it', async () => {
    let arrived: (res: ServerResponse) => void = () => undefined;
    const first = new Promise<ServerResponse>((resolve) => (arrived = resolve));
    const port = await serving((res) => arrived(res));
    const parseError = new Promise((resolve) => api?.server.once('clientError', resolve));
    const answered = rawRequest(port, 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP\r\n\r\n', {
      untilClosed: true,
    });
    const held = await first;
    // The second request failed to parse while the first was still unanswered.
    await parseError;
    held.end('ok');
    const { raw, closedByServer } = await answered;
    expect(finalStatuses(raw)).toEqual([200, 400]);
    expect(closedByServer).toBe(true);
  });
});

describe.each(['plain', 'tls'] as const)('the API server over %s', (transport) => {
  const ca = transport === 'tls' ? createTestCa() : undefined;
  const certificate = ca?.issue('api', { commonName: 'localhost', ...LOOPBACK });
  afterAll(() => ca?.remove());

  /** What the server reported as refused before any handler: code and request id. */
  const refused: [ErrorCode, string][] = [];

  /** A server answering every request 200 `ok`, on port 0. */
  async function serving(): Promise<number> {
    refused.length = 0;
    api = createGatewayServer(
      (_req, res) => res.end('ok'),
      LIMITS,
      certificate === undefined ? undefined : { cert: certificate.cert, key: certificate.key },
      (_socket, code, requestId) => refused.push([code, requestId]),
    );
    const { server } = api;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  /** Sends `bytes` and resolves with every byte received until the server closes. */
  function exchange(port: number, bytes: string): Promise<string> {
    if (ca === undefined)
      return rawRequest(port, bytes, { untilClosed: true }).then((answer) => answer.raw);
    return new Promise((resolve, reject) => {
      const socket = connectTls({ port, host: '127.0.0.1', ca: ca.cert, servername: 'localhost' });
      let raw = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (raw += chunk));
      socket.once('secureConnect', () => socket.write(bytes, 'latin1'));
      socket.once('error', reject);
      socket.once('end', () => resolve(raw));
    });
  }

  it('answers CONNECT with 400 invalid_path under the client’s request id, closes, and reports it', async () => {
    const port = await serving();
    const raw = await exchange(
      port,
      'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\nX-Request-Id: connect-probe\r\n\r\n',
    );
    expect(finalStatuses(raw)).toEqual([400]);
    expect(raw).toContain('x-request-id: connect-probe\r\n');
    expect(raw).toContain('connection: close\r\n');
    expect(raw).toContain('"code":"invalid_path"');
    expect(refused).toEqual([['invalid_path', 'connect-probe']]);
  });

  it('answers a pipelined request first, then 400 invalid_path for the CONNECT after it', async () => {
    const port = await serving();
    const raw = await exchange(
      port,
      'GET /a HTTP/1.1\r\nHost: x\r\n\r\nCONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n',
    );
    expect(finalStatuses(raw)).toEqual([200, 400]);
  });

  it('hands a request with an unknown expectation to the handler instead of answering 417', async () => {
    const port = await serving();
    const raw = await exchange(
      port,
      'GET /a HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n',
    );
    expect(finalStatuses(raw)).toEqual([200]);
    expect(refused).toEqual([]);
  });
});

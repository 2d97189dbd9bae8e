import { createHash } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import {
  connect,
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GatewayError } from '../../src/errors/gateway-error.js';
import { createUpstreamTarget, type Exchange, type Forwarder } from '../../src/proxy/forwarder.js';
import { createHttpProxyForwarder } from '../../src/proxy/http-proxy-forwarder.js';
import { frameRequestBody, type RequestBody } from '../../src/proxy/request-body.js';
import { createUndiciForwarder } from '../../src/proxy/undici-forwarder.js';

// The contract every forwarding engine keeps, run against each: a real upstream and a
// real front server on loopback, the engine in between, a real HTTP client.

const ENGINES = [
  ['http-proxy-3', createHttpProxyForwarder],
  ['undici', createUndiciForwarder],
] as const;

const servers: Server[] = [];
const forwarders: Forwarder[] = [];

afterEach(async () => {
  for (const forwarder of forwarders.splice(0)) forwarder.close();
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** Raw upstreams, and their connections: closed after each test. */
const netServers: { server: NetServer; sockets: Socket[] }[] = [];

afterEach(async () => {
  await Promise.all(
    netServers.splice(0).map(({ server, sockets }) => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

async function listenNet(server: NetServer): Promise<number> {
  const sockets: Socket[] = [];
  netServers.push({ server, sockets });
  server.on('connection', (socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends `head` on a fresh connection and resolves with every byte received until the server closes. */
function rawExchange(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
      // The test's upstreams end their answers so.
      if (/\r\n\r\n[^]*(?:after the hints|ok)$/.test(received)) socket.end();
    });
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A front server that forwards every request as it is, and the errors it was told of. */
async function front(
  engine: (typeof ENGINES)[number][1],
  upstreamPort: number,
  maxSockets = 16,
  /** The front's own fields for the response head (as the rate limiter's). */
  responseFields: readonly string[] = [],
  timeoutMs = 5_000,
  bodyBufferBytes = 16 * 1024,
): Promise<Front> {
  const observed: Front['observed'] = { seconds: [], errors: [] };
  const forwarder = engine(
    createUpstreamTarget('up', new URL(`http://127.0.0.1:${upstreamPort}`), {
      timeoutMs,
      connectTimeoutMs: 1_000,
      maxSockets,
      bodyBufferBytes,
    }),
    {
      observe: (seconds) => observed.seconds.push(seconds),
      countError: (kind) => observed.errors.push(kind),
    },
  );
  forwarders.push(forwarder);
  const errors: GatewayError[] = [];
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    const headers: Record<string, string> = { host: `127.0.0.1:${upstreamPort}` };
    const type = req.headers['content-type'];
    if (type !== undefined) headers['content-type'] = type;
    // The gateway's decision, as the request handler takes it (see request-body).
    const forward = (body: RequestBody | undefined): void => {
      if (body === undefined) return;
      const exchange: Exchange = {
        path: req.url ?? '/',
        headers,
        body,
        requestId: 'req-1',
        responseFields,
        onError: (error) => {
          errors.push(error);
          res.destroy();
        },
        upstreamStartedAt: performance.now(),
        upstreamStatus: undefined,
        upstreamMs: undefined,
        upstreamError: undefined,
      };
      exchanges.push(exchange);
      forwarder.forward(req, res, exchange);
    };
    const body = frameRequestBody(req, bodyBufferBytes);
    if (body instanceof Promise) void body.then(forward);
    else forward(body);
  });
  return { port: await listen(server), errors, exchanges, observed };
}

interface Front {
  readonly port: number;
  readonly errors: GatewayError[];
  /** What the engine wrote on each exchange. */
  readonly exchanges: Exchange[];
  /** What it told the upstream's metrics. */
  readonly observed: { readonly seconds: number[]; readonly errors: string[] };
}

/** The exchange's upstream fields, the time as its type (its value is the clock's). */
const upstreamFields = (exchange: Exchange | undefined) => [
  exchange?.upstreamStatus,
  typeof exchange?.upstreamMs,
  exchange?.upstreamError,
];

function send(
  port: number,
  options: { method?: string; path?: string; body?: Buffer; headers?: Record<string, string> },
): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

describe.each(ENGINES)('the %s engine', (_name, engine) => {
  it('streams a 4 MiB request body up and a 4 MiB response down, byte for byte', async () => {
    const upload = Buffer.alloc(4 * 1024 * 1024, 'u');
    const download = Buffer.alloc(4 * 1024 * 1024, 'd');
    let received = '';
    const upstream = createServer((req, res) => {
      const hash = createHash('sha256');
      req.on('data', (chunk: Buffer) => hash.update(chunk));
      req.on('end', () => {
        received = hash.digest('hex');
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        // Many writes: the engine relays them as they come, not as one buffered body.
        for (let offset = 0; offset < download.length; offset += 65_536)
          res.write(download.subarray(offset, offset + 65_536));
        res.end();
      });
    });
    const { port } = await front(engine, await listen(upstream));
    const answer = await send(port, {
      method: 'POST',
      body: upload,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect([answer.status, sha(answer.body), received]).toEqual([200, sha(download), sha(upload)]);
  });

  describe.each(['POST', 'DELETE'])('frames a %s body upstream', (method) => {
    // The front's buffer is 8 bytes. Past it, the body goes chunked, or with its length when
    // it had all arrived by then (undici measures a stream that has ended).
    const FRAMINGS = [
      ['with the client length', 'content-length', ['hello'], ['length 5']],
      ['chunked, within the buffer, with its length', 'chunked', ['he', 'llo'], ['length 5']],
      [
        'chunked, past the buffer, chunked',
        'chunked',
        ['hello ', 'world, ', 'again'],
        ['chunked', 'length 18'],
      ],
    ] as const;
    it.each(FRAMINGS)('%s', async (_case, framing, parts, framings) => {
      const received: { framing: string; body: string }[] = [];
      const upstream = createServer((req, res) => {
        let body = '';
        req.setEncoding('latin1');
        req.on('data', (chunk: string) => (body += chunk));
        req.on('end', () => {
          const length = req.headers['content-length'];
          received.push({
            framing: req.headers['transfer-encoding'] ?? `length ${length ?? 'none'}`,
            body,
          });
          res.end('ok');
        });
      });
      const { port } = await front(engine, await listen(upstream), 16, [], 5_000, 8);
      const sent = parts.join('');
      const head =
        framing === 'chunked'
          ? 'transfer-encoding: chunked\r\n'
          : `content-length: ${Buffer.byteLength(sent)}\r\n`;
      const body =
        framing === 'chunked'
          ? parts.map((part) => `${part.length.toString(16)}\r\n${part}\r\n`).join('') + '0\r\n\r\n'
          : sent;
      const raw = await rawExchange(
        port,
        `${method} / HTTP/1.1\r\nHost: front\r\nConnection: close\r\n${head}\r\n${body}`,
      );
      expect(raw).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok$/);
      expect(received.map((r) => r.body)).toEqual([sent]);
      expect(framings).toContain(received[0]?.framing);
    });
  });

  it('answers HEAD with the upstream status and headers and no body', async () => {
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '42' });
      res.end();
    });
    const { port } = await front(engine, await listen(upstream));
    const answer = await send(port, { method: 'HEAD' });
    expect([answer.status, answer.headers['content-length'], answer.body.length]).toEqual([
      200,
      '42',
      0,
    ]);
  });

  it('passes any status and its reason through, and strips the hop-by-hop fields', async () => {
    const upstream = createServer((_req, res) => {
      res.writeHead(418, "I'm a teapot", {
        'x-kept': 'yes',
        'keep-alive': 'timeout=5',
        'x-named': 'gone',
        connection: 'x-named',
      });
      res.end('short and stout');
    });
    const { port, exchanges, observed } = await front(engine, await listen(upstream));
    const answer = await send(port, {});
    expect(upstreamFields(exchanges[0])).toEqual([418, 'number', undefined]);
    expect([observed.seconds.length, observed.errors]).toEqual([1, []]);
    expect(observed.seconds[0]).toBe((exchanges[0]?.upstreamMs ?? NaN) / 1000);
    expect([
      answer.status,
      answer.headers['x-kept'],
      answer.headers['x-named'],
      answer.headers['keep-alive'],
      answer.headers['x-request-id'],
      answer.body.toString(),
    ]).toEqual([418, 'yes', undefined, undefined, 'req-1', 'short and stout']);
  });

  it('passes each of several Set-Cookie fields on as its own field', async () => {
    const upstream = createServer((_req, res) => {
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
      res.end('ok');
    });
    const { port } = await front(engine, await listen(upstream));
    const answer = await send(port, {});
    expect(answer.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
  });

  it("writes the front's own response fields beside the upstream's, in its head", async () => {
    const upstream = createServer((req, res) => {
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'x-upstream': 'yes' });
      res.end('body');
    });
    const preset = {
      ratelimit: '"credential";r=4;t=60',
      'ratelimit-policy': '"credential";q=5;w=60',
    };
    const { port } = await front(engine, await listen(upstream), 16, Object.entries(preset).flat());
    for (const path of ['/', '/missing']) {
      const answer = await send(port, { path });
      expect([
        answer.status,
        answer.headers['x-upstream'],
        answer.headers.ratelimit,
        answer.headers['ratelimit-policy'],
      ]).toEqual([path === '/' ? 200 : 404, 'yes', preset.ratelimit, preset['ratelimit-policy']]);
    }
  });

  it('keeps at most maxSockets connections to the upstream, queueing the rest', async () => {
    let open = 0;
    let most = 0;
    const connections = new Set<unknown>();
    const upstream = createServer((_req, res) => {
      // Each answer waits for the next request to arrive, so requests overlap if they can.
      setImmediate(() => res.end('ok'));
    });
    upstream.on('connection', (socket) => {
      connections.add(socket);
      open += 1;
      most = Math.max(most, open);
      socket.on('close', () => (open -= 1));
    });
    const { port } = await front(engine, await listen(upstream), 2);
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(port, {})));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 8 }, () => 200));
    expect(most).toBeLessThanOrEqual(2);
    expect(connections.size).toBeLessThanOrEqual(2);
  });

  it('ends the upstream exchange when the client goes away mid-response', async () => {
    let upstreamGone!: () => void;
    const gone = new Promise<void>((resolve) => (upstreamGone = resolve));
    const upstream = createServer((_req, res) => {
      res.on('close', upstreamGone);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk, and the rest never comes');
    });
    const { port, errors, exchanges, observed } = await front(engine, await listen(upstream));
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.on('close', () => reject(new Error('closed before any data')));
      req.end();
    });
    await gone;
    expect(errors).toEqual([]);
    // The client's doing: no upstream error counted, no upstream time observed.
    expect([exchanges[0]?.upstreamError, observed]).toEqual([
      undefined,
      { seconds: [], errors: [] },
    ]);
  });

  it('records, counts and reports a reset after the headers as an upstream reset', async () => {
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
      res.write('part', () => res.destroy());
    });
    const { port, errors, exchanges, observed } = await front(engine, await listen(upstream));
    await send(port, {}).catch(() => undefined);
    await vi.waitFor(() => expect(observed.errors).toEqual(['reset']));
    expect([upstreamFields(exchanges[0]), observed.seconds]).toEqual([
      [200, 'number', 'reset'],
      [],
    ]);
    // Through onError on every engine, so the request's line reads the same (its cause).
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toEqual(['upstream_unavailable']));
    expect(errors[0]?.cause).toBeInstanceOf(Error);
  });

  it('records and counts an upstream silent past the timeout once, as a timeout', async () => {
    const upstream = createServer(() => undefined);
    const { port, errors, exchanges, observed } = await front(
      engine,
      await listen(upstream),
      16,
      [],
      100,
    );
    await send(port, {}).catch(() => undefined);
    expect(errors.map((e) => e.code)).toEqual(['upstream_timeout']);
    expect([upstreamFields(exchanges[0]), observed]).toEqual([
      [undefined, 'number', 'timeout'],
      { seconds: [], errors: ['timeout'] },
    ]);
  });

  it('drops a 103 Early Hints, as nginx does, and forwards the final answer whole', async () => {
    const upstream = createServer((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' }, () =>
        res.end('after the hints'),
      );
    });
    const { port, errors, exchanges } = await front(engine, await listen(upstream));
    const raw = await rawExchange(port, 'GET / HTTP/1.1\r\nHost: front\r\n\r\n');
    expect(raw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(raw).toMatch(/\r\n\r\nafter the hints$/);
    expect([errors, exchanges[0]?.upstreamStatus]).toEqual([[], 200]);
  });

  it('sends the declared length of an overlong answer, and closes that upstream connection', async () => {
    const connections: Socket[] = [];
    const upstream = createNetServer((socket) => {
      connections.push(socket);
      socket.once('data', () =>
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA BYTES'),
      );
    });
    const upstreamPort = await listenNet(upstream);
    const { port, errors, exchanges } = await front(engine, upstreamPort);
    const first = await send(port, {});
    expect([first.status, first.body.toString()]).toEqual([200, 'hello']);
    const second = await send(port, {});
    expect([second.status, second.body.toString()]).toEqual([200, 'hello']);
    expect([errors, exchanges.map((e) => e.upstreamError)]).toEqual([[], [undefined, undefined]]);
    // Each on its own connection: what followed the declared length never reads as an answer.
    expect(connections.length).toBe(2);
  });

  it('reports a refused connection as 502 upstream_unavailable', async () => {
    const closed = createServer();
    const closedPort = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    servers.splice(servers.indexOf(closed), 1);
    const { port, errors, exchanges, observed } = await front(engine, closedPort);
    await send(port, {}).catch(() => undefined);
    expect(errors.map((e) => [e.code, e.status])).toEqual([['upstream_unavailable', 502]]);
    expect(upstreamFields(exchanges[0])).toEqual([undefined, 'number', 'connect_refused']);
    expect(observed).toEqual({ seconds: [], errors: ['connect_refused'] });
  });
});

import bcrypt from 'bcrypt';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import {
  startNginxUpstream,
  startPythonUpstream,
  type LoggingUpstream,
} from '../support/logging-upstream.js';
import { proxyTestsRun, NGINX } from '../support/proxy-process.js';
import { rawRequest } from '../support/raw-request.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';

// Every body the gateway forwards is framed: never `content-length: 0` beside a body, never
// a body without a length or chunking, whatever the method and the client's framing. Checked
// against upstreams that are not Node: Python's http.server (which cannot read a chunked
// body) and nginx, each logging every request it serves, and with a property over method x
// framing x body against the echo upstream.

const KEY = 'ak_framing_pair_01';
const SECRET = 'framing-secret-0123456789abcdefghijklmnop';
const AUTH = `Authorization: ${basicHeader(KEY, SECRET)}\r\n`;
/** The property's upstream buffers this much, so its bodies past the buffer stay small. */
const ECHO_BUFFER_BYTES = 64;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** What an attacker hides in a body: a request the gateway never checked, as another subject. */
const SMUGGLED = 'GET /accounts/admin/x HTTP/1.1\r\nHost: upstream\r\nX-Auth-Subject: bob\r\n\r\n';

let python: LoggingUpstream;
let nginx: LoggingUpstream | undefined;
let echo: EchoUpstream;
let gateway: GatewayProcess;

const route = (name: string, prefix: string) => ({
  name,
  prefixes: [prefix],
  methods: [...METHODS],
  upstream: name,
  upstreamPath: '/x',
  auth: ['basic' as const],
});

beforeAll(async () => {
  const secretHash = await bcrypt.hash(SECRET, TEST_BCRYPT_COST);
  [python, nginx, echo] = await Promise.all([
    startPythonUpstream(),
    proxyTestsRun(NGINX) ? startNginxUpstream() : undefined,
    startEchoUpstream(),
  ]);
  gateway = await startGateway(
    gatewayYaml({
      config: {
        admin: { enabled: false },
        upstreams: {
          python: { url: python.url },
          nginx: { url: nginx?.url ?? python.url },
          echo: { url: echo.url, bodyBufferBytes: ECHO_BUFFER_BYTES },
        },
        routes: [route('python', '/p/'), route('nginx', '/n/'), route('echo', '/e/')],
        credentials: { seed: { keys: [{ key: KEY, secretHash, subject: 'alice' }] } },
        keys: { lastUsedIntervalSec: 0 },
        logging: { level: 'info', requests: true },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([python?.stop(), nginx?.stop(), echo?.close()]);
});

/** A request on a connection of its own, which the client closes after the answer. */
const head = (method: string, path: string, ...fields: string[]): string =>
  `${method} ${path} HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Connection: close\r\n${fields.join('')}\r\n`;

/** `parts` as chunks of a chunked body, then the last chunk. */
const chunked = (...parts: string[]): string =>
  parts.map((part) => `${Buffer.byteLength(part, 'latin1').toString(16)}\r\n${part}\r\n`).join('') +
  '0\r\n\r\n';

const UPSTREAMS = [
  { name: 'python http.server', prefix: '/p', upstream: () => python },
  { name: 'nginx', prefix: '/n', upstream: () => nginx, skip: !proxyTestsRun(NGINX) },
] as const;

describe.each(UPSTREAMS)('behind $name', ({ prefix, upstream, ...entry }) => {
  const run = !('skip' in entry && entry.skip);

  /**
   * What the upstream served from `mark` on, once a plain GET sent after the client's own
   * request (on a new connection through the gateway) was served: a request smuggled in a
   * body is read right after the one that carried it, before the upstream waits for more.
   */
  async function servedSince(mark: number): Promise<Record<string, unknown>[]> {
    const up = upstream();
    if (up === undefined) throw new Error('not started');
    const marker = await rawRequest(gateway.port, head('GET', `${prefix}/marker`));
    expect(marker.status).toBe(200);
    for (let count = mark + 1; ; count += 1) {
      const served = await up.untilServed(count);
      if (served.at(-1)?.target === '/x/marker') return served.slice(mark, -1);
    }
  }

  it.runIf(run)(
    'serves a DELETE with a chunked body that holds a request as that one request',
    async () => {
      const up = upstream();
      const mark = up?.served.length ?? 0;
      const answer = await rawRequest(
        gateway.port,
        head('DELETE', `${prefix}/1`, 'Transfer-Encoding: chunked\r\n') + chunked(SMUGGLED),
      );
      expect([answer.status, answer.body]).toEqual([200, 'served\n']);
      const served = await servedSince(mark);
      expect(served.map((r) => [r.method, r.target, r.subject])).toEqual([
        ['DELETE', '/x/1', 'alice'],
      ]);
      // Sent with its length: what the body held is the body, whole.
      expect(served[0]?.length).toBe(String(SMUGGLED.length));
      if ('body' in (served[0] ?? {})) expect(served[0]?.body).toBe(SMUGGLED);
    },
  );

  it.runIf(run)(
    'refuses with 400 a DELETE whose Connection header names Content-Length, forwarding nothing',
    async () => {
      const mark = upstream()?.served.length ?? 0;
      const answer = await rawRequest(
        gateway.port,
        head(
          'DELETE',
          `${prefix}/1`,
          `Content-Length: ${SMUGGLED.length}\r\n`,
          'Connection: content-length\r\n',
        ) + SMUGGLED,
      );
      expectGatewayError(answer, 'bad_request');
      expect(await servedSince(mark)).toEqual([]);
    },
  );

  it.runIf(run)('serves a small chunked POST with its length and its body whole', async () => {
    const mark = upstream()?.served.length ?? 0;
    const body = 'name=alice&note=chunked';
    const answer = await rawRequest(
      gateway.port,
      head('POST', `${prefix}/items`, 'Transfer-Encoding: chunked\r\n') +
        chunked(body.slice(0, 9), body.slice(9)),
    );
    expect([answer.status, answer.body]).toEqual([200, 'served\n']);
    const served = await servedSince(mark);
    expect(served.map((r) => [r.method, r.target, r.length, r.encoding ?? ''])).toEqual([
      ['POST', '/x/items', String(body.length), ''],
    ]);
    if ('body' in (served[0] ?? {})) expect(served[0]?.body).toBe(body);
  });
});

describe('a Connection header naming the body framing', () => {
  it.each(['transfer-encoding', 'keep-alive, Transfer-Encoding', 'Content-Length'])(
    'is refused with 400 bad_request: Connection: %s',
    async (named) => {
      const mark = upstreamMark(echo);
      const answer = await rawRequest(
        gateway.port,
        `POST /e/1 HTTP/1.1\r\nHost: gateway.test\r\n${AUTH}Content-Length: 5\r\nConnection: ${named}\r\n\r\nhello`,
      );
      expectGatewayError(answer, 'bad_request');
      expect(mark.since()).toEqual([]);
    },
  );
});

describe('every client request, whatever its method, framing and body', () => {
  const framing = fc.constantFrom('none', 'content-length', 'chunked');
  const bytes = (min: number, max: number) =>
    fc.uint8Array({ minLength: min, maxLength: max }).map((b) => Buffer.from(b).toString('latin1'));
  const body = fc.oneof(
    fc.constant(''),
    bytes(1, ECHO_BUFFER_BYTES),
    bytes(ECHO_BUFFER_BYTES + 1, ECHO_BUFFER_BYTES * 4),
    // A body that reads as a request if its framing is lost.
    bytes(0, 8).map((b) => b + SMUGGLED),
  );

  it('reaches the upstream as exactly one request with its body intact, and logs one line', async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...METHODS),
        framing,
        body,
        fc.integer({ min: 1, max: 3 }),
        async (method, framing, body, pieces) => {
          // 'none' sends no body, so only an empty one.
          const payload = framing === 'none' ? '' : body;
          sent += 1;
          const requestId = `framing-${String(sent)}`;
          const mark = upstreamMark(echo);
          const size = Math.ceil(payload.length / pieces);
          const parts = Array.from({ length: pieces }, (_, i) =>
            payload.slice(i * size, (i + 1) * size),
          ).filter((part) => part !== '');
          const fields = [`X-Request-Id: ${requestId}\r\n`];
          if (framing === 'content-length') fields.push(`Content-Length: ${payload.length}\r\n`);
          if (framing === 'chunked') fields.push('Transfer-Encoding: chunked\r\n');
          const bytes =
            head(method, '/e/1', ...fields) + (framing === 'chunked' ? chunked(...parts) : payload);
          const answer = await rawRequest(gateway.port, bytes);
          // A body (or chunked framing) on GET or HEAD is refused before anything is forwarded.
          const refused =
            (method === 'GET' || method === 'HEAD') &&
            (framing === 'chunked' || payload.length > 0);
          expect(answer.status).toBe(refused ? 400 : 200);
          const received = mark.since();
          if (refused) expect(received).toEqual([]);
          else {
            expect(received.map((r) => [r.method, r.url])).toEqual([[method, '/x/1']]);
            expect(received[0]?.body).toBe(Buffer.from(payload, 'latin1').toString());
          }
        },
      ),
      { numRuns: 60 },
    );
    // One access line per request (the log is written in batches: awaited once, at the end).
    const lines = await untilLogs(
      gateway,
      `${String(sent)} access lines`,
      (line) => line.msg === 'request' && String(line.request_id).startsWith('framing-'),
      sent,
    );
    const ids = lines.map((line) => line.request_id);
    expect(new Set(ids).size).toBe(sent);
    expect(ids).toHaveLength(sent);
    // A request smuggled in the last run's body would have arrived by now, after the answer.
    const mark = upstreamMark(echo);
    await rawRequest(gateway.port, head('GET', '/e/last'));
    expect(mark.since().map((r) => r.url)).toEqual(['/x/last']);
  });
});

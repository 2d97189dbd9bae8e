import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { openIdleConnection } from '../support/idle-connection.js';
import { rawRequest } from '../support/raw-request.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { within } from '../support/within.js';

const HEADERS_TIMEOUT_MS = 300;

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: uniquePrefix('timeout') },
      config: { server: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 600 } },
    }),
  );
});

afterAll(async () => {
  await gateway.stop();
  await upstream.close();
});

describe('a client that sends its headers too slowly', () => {
  // The header block never ends, so only the gateway's timeout can end the exchange: no
  // sooner than headersTimeoutMs, and long before an idle connection opened just before is
  // closed at keepAliveTimeoutMs (5 s) — which the default headersTimeoutMs (10 s) would not be.
  it('gets 408 request_timeout in the error envelope once headersTimeoutMs has passed, long before keepAliveTimeoutMs, and the upstream nothing', async () => {
    const idle = await openIdleConnection(gateway.port);
    const started = performance.now();
    // The header block never ends: no blank line follows.
    const res = await rawRequest(gateway.port, 'GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n');
    const elapsedMs = performance.now() - started;
    const idleClosedBefore = idle.closed();
    idle.destroy();
    expect(res.status).toBe(408);
    expect(res.json).toEqual({
      result: 'error',
      status: 408,
      error: { code: 'request_timeout', message: 'The request was not received in time.' },
      request_id: res.headers['x-request-id'],
    });
    expectGatewayError(res, 'request_timeout');
    expect(elapsedMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS);
    expect(idleClosedBefore).toBe(false);
    expect(upstream.received).toEqual([]);
  });
});

describe('2,000 clients that each send half a request head, then stay silent and keep their side open', () => {
  const CLIENTS = 2_000;
  /** Connections opened at once: the listen backlog is not the subject here. */
  const BATCH = 500;
  /** Descriptors the process may open or close meanwhile on its own (its Redis connections, say). */
  const SLACK = 10;

  /** The gateway process's open file descriptors (Linux: one entry each in /proc/<pid>/fd). */
  const openFiles = (): number => readdirSync(`/proc/${String(gateway.child.pid)}/fd`).length;

  /**
   * Connects, sends a head that never ends, and resolves with the socket once the gateway has
   * answered and closed its side (its FIN): the client's side stays open (allowHalfOpen), as a
   * client that never reads its socket's end would keep it.
   */
  function halfHead(): Promise<{ socket: Socket; answer: string }> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port: gateway.port, host: '127.0.0.1', allowHalfOpen: true });
      let answer = '';
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('end', () => resolve({ socket, answer }));
      socket.write('GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n');
    });
  }

  it.skipIf(process.platform !== 'linux')(
    'each gets 408 and the gateway closes the socket: its open descriptors come back to their count before',
    { timeout: 60_000 },
    async () => {
      const before = openFiles();
      const sockets: Socket[] = [];
      try {
        const statuses = new Map<string, number>();
        for (let opened = 0; opened < CLIENTS; opened += BATCH) {
          const batch = await Promise.all(Array.from({ length: BATCH }, halfHead));
          for (const { socket, answer } of batch) {
            sockets.push(socket);
            const status = answer.slice(0, answer.indexOf('\r\n'));
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }
        }
        expect(statuses).toEqual(new Map([['HTTP/1.1 408 Request Timeout', CLIENTS]]));
        // The gateway's side goes once its answer is written: nothing of the process waits
        // for a client that never closes. Polled, since no event tells another process's count.
        await within(
          20_000,
          `the gateway's open descriptors to come back to ${before} (+${SLACK})`,
          (async () => {
            while (openFiles() > before + SLACK) await new Promise((r) => setTimeout(r, 50));
          })(),
        ).catch((error: unknown) => {
          throw new Error(`${String(error)}; open now: ${openFiles()}`);
        });
        expect(sockets.every((socket) => !socket.destroyed)).toBe(true);
      } finally {
        for (const socket of sockets) socket.destroy();
      }
    },
  );
});

import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { openIdleConnection } from '../support/idle-connection.js';
import { rawRequest } from '../support/raw-request.js';
import { uniquePrefix } from '../support/seed-redis.js';

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

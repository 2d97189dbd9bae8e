import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { rawRequest } from '../support/raw-request.js';
import { uniquePrefix } from '../support/seed-redis.js';

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: uniquePrefix('timeout') },
      config: { server: { headersTimeoutMs: 300, requestTimeoutMs: 600 } },
    }),
  );
});

afterAll(async () => {
  await gateway.stop();
  await upstream.close();
});

describe('a client that sends its headers too slowly', () => {
  it('gets 408 request_timeout in the error envelope within about a second, and the upstream nothing', async () => {
    const started = performance.now();
    // The header block never ends: no blank line follows.
    const res = await rawRequest(gateway.port, 'GET /accounts HTTP/1.1\r\nHost: gateway.test\r\n');
    const elapsedMs = performance.now() - started;
    expect(res.status).toBe(408);
    expect(res.json).toEqual({
      result: 'error',
      status: 408,
      error: { code: 'request_timeout', message: 'The request was not received in time.' },
      request_id: res.headers['x-request-id'],
    });
    expectGatewayError(res, 'request_timeout');
    // Node checks the timeouts once per connectionsCheckingInterval (1 s here, 30 s by default).
    expect(elapsedMs).toBeLessThan(2_500);
    expect(upstream.received).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { redisGatewayYaml, startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { rawRequest } from './raw-http.js';

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gateway = await startGateway(`
${redisGatewayYaml({ redisUrl: inject('redisUrl'), keyPrefix: uniquePrefix('timeout'), upstreamUrl: upstream.url })}
server: { headersTimeoutMs: 300, requestTimeoutMs: 600 }
`);
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
    const body = JSON.parse(res.body) as { request_id: string };
    expect(body).toEqual({
      result: 'error',
      status: 408,
      error: { code: 'request_timeout', message: 'The request was not received in time.' },
      request_id: res.headers['x-request-id'],
    });
    // Node checks the timeouts once per connectionsCheckingInterval (1 s here, 30 s by default).
    expect(elapsedMs).toBeLessThan(2_500);
    expect(upstream.received).toEqual([]);
  });
});

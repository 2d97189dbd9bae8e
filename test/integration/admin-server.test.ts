import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import { createMetrics } from '../../src/observability/metrics.js';
import {
  errorEnvelope,
  expectGatewayError,
  GENERATED_REQUEST_ID,
} from '../support/expect-gateway-error.js';
import { fromFetch } from '../support/http-answer.js';

describe('the admin server', () => {
  /** What the next readiness check answers: ready, not ready, or a failed check. */
  let readiness: 'ready' | 'not_ready' | 'throws' = 'ready';
  /** Whether the gateway is draining (a shutdown began). */
  let draining = false;
  let server: Server;
  let baseUrl: string;
  const metrics = createMetrics();

  beforeAll(async () => {
    server = createAdminServer({
      metrics,
      ready: () =>
        readiness === 'throws'
          ? Promise.reject(new Error('store exploded'))
          : Promise.resolve(readiness === 'ready'),
      draining: () => draining,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers /healthz with 200 {"status":"ok"} and a generated X-Request-Id', async () => {
    const res = await fetch(`${baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('keeps a well-formed X-Request-Id from the client and replaces a malformed one', async () => {
    const kept = await fetch(`${baseUrl}/healthz`, { headers: { 'x-request-id': 'probe-42' } });
    expect(kept.headers.get('x-request-id')).toBe('probe-42');
    await kept.arrayBuffer();
    const replaced = await fetch(`${baseUrl}/healthz`, {
      headers: { 'x-request-id': 'has spaces' },
    });
    expect(replaced.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    await replaced.arrayBuffer();
  });

  it('answers HEAD /healthz with 200 and no body', async () => {
    const res = await fetch(`${baseUrl}/healthz`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('answers /readyz with 200 {"status":"ready"} while the gateway can serve', async () => {
    readiness = 'ready';
    const res = await fetch(`${baseUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it.each(['not_ready', 'throws'] as const)(
    'answers /readyz with the 503 credential_store_unavailable envelope when the check says %s',
    async (answer) => {
      readiness = answer;
      try {
        const res = await fetch(`${baseUrl}/readyz`, { headers: { 'x-request-id': 'lb-1' } });
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(res.headers.get('cache-control')).toBe('no-store');
        expect(res.headers.get('x-request-id')).toBe('lb-1');
        expect(await res.json()).toEqual(
          errorEnvelope(
            'credential_store_unavailable',
            'lb-1',
            'Credentials cannot be checked right now.',
          ),
        );
      } finally {
        readiness = 'ready';
      }
    },
  );

  it('answers /readyz with the 503 draining envelope while draining, even with the store up', async () => {
    readiness = 'ready';
    draining = true;
    try {
      const res = await fetch(`${baseUrl}/readyz`, { headers: { 'x-request-id': 'lb-2' } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual(
        errorEnvelope(
          'draining',
          'lb-2',
          'The gateway is shutting down; retry on another instance.',
        ),
      );
      // /healthz is liveness, not readiness: still 200 while draining.
      const health = await fetch(`${baseUrl}/healthz`);
      expect(health.status).toBe(200);
      await health.arrayBuffer();
    } finally {
      draining = false;
    }
  });

  it('answers /readyz with 503 draining when the drain begins during the store check', async () => {
    let answer: (ready: boolean) => void = () => undefined;
    const pending = new Promise<boolean>((resolve) => (answer = resolve));
    const slow = createAdminServer({
      metrics: createMetrics(),
      ready: () => pending,
      draining: () => draining,
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
      const res = fetch(`${url}/readyz`);
      // The check is under way once the request reached the server; then the drain begins.
      await new Promise<void>((resolve) => slow.once('request', () => resolve()));
      draining = true;
      answer(true);
      const answered = await fromFetch(await res);
      expect(answered.status).toBe(503);
      expect(answered.headers['retry-after']).toBe('1');
      expectGatewayError(answered, 'draining');
    } finally {
      draining = false;
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });

  it('serves gateway_ready as the gateway set it, whatever /readyz answered', async () => {
    metrics.setReady(true);
    readiness = 'not_ready';
    try {
      await (await fetch(`${baseUrl}/readyz`)).arrayBuffer();
      expect(await (await fetch(`${baseUrl}/metrics`)).text()).toMatch(/^gateway_ready 1$/m);
      metrics.setReady(false);
      readiness = 'ready';
      await (await fetch(`${baseUrl}/readyz`)).arrayBuffer();
      expect(await (await fetch(`${baseUrl}/metrics`)).text()).toMatch(/^gateway_ready 0$/m);
    } finally {
      readiness = 'ready';
    }
  });

  it('serves Prometheus text on /metrics', async () => {
    metrics.setReady(true);
    const res = await fetch(`${baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    const text = await res.text();
    expect(text).toMatch(/^gateway_ready 1$/m);
    expect(text).toContain('# TYPE gateway_requests_total counter');
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('answers an unknown path with the 404 not_found envelope, whatever the method', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await fetch(`${baseUrl}/admin`, {
        method,
        headers: { 'x-request-id': 'nf-1' },
      });
      expect(res.status).toBe(404);
      expect(res.headers.get('x-request-id')).toBe('nf-1');
      expect(res.headers.get('allow')).toBeNull();
      expect(await res.json()).toEqual(
        errorEnvelope('not_found', 'nf-1', 'No resource matches the request path.'),
      );
    }
  });

  it.each(['/healthz', '/readyz', '/metrics'])(
    'answers POST %s with the 405 method_not_allowed envelope and Allow: GET, HEAD',
    async (path) => {
      const res = await fetch(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { 'x-request-id': 'm-1' },
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(res.headers.get('x-request-id')).toBe('m-1');
      expect(await res.json()).toEqual(
        errorEnvelope('method_not_allowed', 'm-1', 'The method is not allowed on this resource.'),
      );
    },
  );
});

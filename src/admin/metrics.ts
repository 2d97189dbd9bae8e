import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface GatewayMetrics {
  readonly registry: Registry;
  observeRequest(route: string, status: number, seconds: number): void;
  setReady(ready: boolean): void;
}

export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'gateway_requests_total',
    help: 'Requests answered, by route and status.',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'gateway_request_duration_seconds',
    help: 'Time from request to response end, by route.',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const ready = new Gauge({
    name: 'gateway_ready',
    help: '1 when the gateway can serve.',
    registers: [registry],
  });
  return {
    registry,
    observeRequest(route, status, seconds) {
      requests.inc({ route, status: String(status) });
      duration.observe({ route }, seconds);
    },
    setReady(value) {
      ready.set(value ? 1 : 0);
    },
  };
}

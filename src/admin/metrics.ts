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
  // Label children resolved once per (route, status): prom-client hashes the label object
  // on every call otherwise, on the hot path of every request.
  const counters = new Map<string, { inc(): void }>();
  const timers = new Map<string, { observe(value: number): void }>();
  return {
    registry,
    observeRequest(route, status, seconds) {
      const id = `${route} ${status}`;
      let counter = counters.get(id);
      if (counter === undefined) {
        counter = requests.labels({ route, status: String(status) });
        counters.set(id, counter);
      }
      counter.inc();
      let timer = timers.get(route);
      if (timer === undefined) {
        timer = duration.labels({ route });
        timers.set(route, timer);
      }
      timer.observe(seconds);
    },
    setReady(value) {
      ready.set(value ? 1 : 0);
    },
  };
}

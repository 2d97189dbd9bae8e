import { createServer, type Server } from 'node:http';
import type { GatewayMetrics } from './metrics.js';

export interface AdminOptions {
  metrics: GatewayMetrics;
  /** Resolves when the gateway can serve (credential store reachable, config loaded). */
  ready: () => Promise<boolean>;
}

/** Health, readiness and metrics, on their own port so they are never exposed with the API. */
export function createAdminServer(options: AdminOptions): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(405, { status: 'method_not_allowed' });
    if (path === '/healthz') return json(200, { status: 'ok' });
    if (path === '/readyz') {
      options.ready().then(
        (ready) => {
          options.metrics.setReady(ready);
          json(ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
        },
        () => json(503, { status: 'not_ready' }),
      );
      return;
    }
    if (path === '/metrics') {
      options.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': options.metrics.registry.contentType });
          res.end(text);
        },
        () => json(500, { status: 'error' }),
      );
      return;
    }
    json(404, { status: 'not_found' });
  });
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeError } from '../errors/error-envelope.js';
import { GatewayError } from '../errors/gateway-error.js';
import { writeJson } from '../http/json-response.js';
import { pickRequestId } from '../http/request-id.js';
import type { GatewayMetrics } from '../observability/metrics.js';

export interface AdminOptions {
  metrics: GatewayMetrics;
  /** Resolves when the gateway can serve (credential store reachable, config loaded). */
  ready: () => Promise<boolean>;
}

const PATHS = new Set(['/healthz', '/readyz', '/metrics']);
const METHODS = ['GET', 'HEAD'] as const;

/**
 * Health, readiness and metrics, on their own port so they are never exposed with the API.
 * The success bodies are the documented probe answers; every error is the gateway's error
 * envelope, as on the API port, and every answer carries X-Request-Id.
 */
export function createAdminServer(options: AdminOptions): Server {
  return createServer((req, res) => {
    const requestId = pickRequestId(req.headers['x-request-id']);
    const path = (req.url ?? '').split('?')[0] ?? '';
    // Like the API port: the path is matched first (404), then the method (405).
    if (!PATHS.has(path)) return writeError(res, new GatewayError('not_found'), requestId);
    if (!(METHODS as readonly (string | undefined)[]).includes(req.method)) {
      return writeError(res, new GatewayError('method_not_allowed', { allow: METHODS }), requestId);
    }
    if (path === '/healthz') return writeJson(res, 200, '{"status":"ok"}', requestId);
    if (path === '/readyz') return answerReadiness(options, res, requestId);
    answerMetrics(options, req, res, requestId);
  });
}

/**
 * A load balancer reads only the status; the 503 body is the envelope with the code the
 * API port answers during the same outage, so a person reading either sees one cause.
 */
function answerReadiness(options: AdminOptions, res: ServerResponse, requestId: string): void {
  const notReady = (cause?: unknown): void =>
    writeError(
      res,
      new GatewayError('credential_store_unavailable', { cause, retryAfterSec: 1 }),
      requestId,
    );
  options.ready().then(
    (ready) => {
      options.metrics.setReady(ready);
      if (ready) writeJson(res, 200, '{"status":"ready"}', requestId);
      else notReady();
    },
    (error: unknown) => {
      options.metrics.setReady(false);
      notReady(error);
    },
  );
}

function answerMetrics(
  options: AdminOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): void {
  const { registry } = options.metrics;
  registry.metrics().then(
    (text) => {
      res.writeHead(200, {
        'content-type': registry.contentType,
        'content-length': String(Buffer.byteLength(text)),
        'cache-control': 'no-store',
        'x-request-id': requestId,
      });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
    (error: unknown) =>
      writeError(res, new GatewayError('internal_error', { cause: error }), requestId),
  );
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeError } from '../errors/error-envelope.js';
import { GatewayError } from '../errors/gateway-error.js';
import { writeJson } from '../http/json-response.js';
import { pickRequestId } from '../http/request-id.js';
import type { MetricsSource } from '../observability/metrics.js';
import { OWN_PATHS, ownExactPaths } from '../routing/own-paths.js';

/** Why a gateway cannot serve, as /readyz names it in its 503 envelope. */
export type NotReadyCode = 'credential_store_unavailable' | 'draining' | 'overloaded';

export interface AdminOptions {
  metrics: MetricsSource;
  /**
   * Resolves with true when the gateway can serve (credential store reachable, config
   * loaded); false means the store does not answer; a code names another cause.
   */
  ready: () => Promise<boolean | NotReadyCode>;
  /** True once a shutdown began: readiness is then 503 `draining`, whatever `ready` says. */
  draining: () => boolean;
}

const PATHS = new Set(ownExactPaths('admin'));
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
    if (path === OWN_PATHS.health.path) return writeJson(res, 200, '{"status":"ok"}', requestId);
    if (path === OWN_PATHS.readiness.path) return answerReadiness(options, res, requestId);
    answerMetrics(options, req, res, requestId);
  });
}

/**
 * Asks the store now, unlike gateway_ready, which follows the connection's events: a
 * load balancer reads only the status; the 503 body is the envelope with the code the
 * API port answers during the same outage, so a person reading either sees one cause.
 * While the gateway drains it is not ready, so a load balancer stops sending it traffic;
 * draining is checked again once the store answers, as a drain may begin meanwhile.
 */
function answerReadiness(options: AdminOptions, res: ServerResponse, requestId: string): void {
  const answer = (ready: boolean | NotReadyCode, cause?: unknown): void => {
    if (options.draining()) {
      writeError(res, new GatewayError('draining', { retryAfterSec: 1 }), requestId);
      return;
    }
    if (ready === true) writeJson(res, 200, '{"status":"ready"}', requestId);
    else {
      const code = ready === false ? 'credential_store_unavailable' : ready;
      writeError(res, new GatewayError(code, { cause, retryAfterSec: 1 }), requestId);
    }
  };
  if (options.draining()) return answer(false);
  options.ready().then(
    (ready) => answer(ready),
    (error: unknown) => answer(false, error),
  );
}

function answerMetrics(
  options: AdminOptions,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): void {
  const { metrics } = options;
  metrics.scrape().then(
    (text) => {
      res.writeHead(200, {
        'content-type': metrics.contentType,
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

import type { Socket } from 'node:net';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-codes.js';
import { createAccessLog } from '../observability/access-log.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { normalizeAddress } from './client-address.js';
import { takeExchangeBytes, type ExchangeBytes } from './connection-bytes.js';

/** A request Node's parser refused, answered with the error `code` under `requestId`. */
export type RejectedRequestLog = (socket: Socket, code: ErrorCode, requestId: string) => void;

export interface RejectedRequestOptions {
  logger: Logger;
  logRequests: boolean;
  metrics: GatewayMetrics;
}

/**
 * Counts and logs a request whose head Node's parser refused (bytes a header may not hold, a
 * bad target, a head too large or too late), answered by create-server before any handler
 * ran: in gateway_requests_total{route="none",source="gateway"} and on an access line, as
 * every request the gateway answers. Only what the connection tells is known: the peer's
 * address (X-Forwarded-For was not read) and the bytes; the method and path are written
 * empty, no user agent, since the head did not parse, and its duration as 0.
 */
export function createRejectedRequestLog(options: RejectedRequestOptions): RejectedRequestLog {
  const accessLog = options.logRequests
    ? createAccessLog(options.logger, { query: false })
    : undefined;
  return (socket, code, requestId) => {
    const { status } = ERROR_CATALOGUE[code];
    options.metrics.observeRequest('none', status, 0, 'gateway');
    if (accessLog === undefined) return;
    const bytes: ExchangeBytes = { bytesIn: 0, bytesOut: 0 };
    takeExchangeBytes(socket, bytes);
    accessLog({
      requestId,
      method: '',
      target: '',
      route: 'none',
      status,
      durationMs: 0,
      clientAddress: normalizeAddress(socket.remoteAddress ?? ''),
      userAgent: undefined,
      ...bytes,
      upstreamStatus: undefined,
      upstreamMs: undefined,
      upstreamError: undefined,
      authMethod: undefined,
      subject: undefined,
      key: undefined,
      authFailure: undefined,
      errorCode: code,
      rateLimitShadow: undefined,
      traceId: undefined,
      aborted: false,
    });
  };
}

import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { writeRawError } from '../errors/error-envelope.js';
import type { ErrorCode } from '../errors/error-codes.js';
import type { RequestHandler } from './request-handler.js';
import { pickRequestId } from './request-id.js';

export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderCount: number;
}

export function createGatewayServer(handler: RequestHandler, limits: ServerLimits): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default), letting slow
      // clients linger far past them.
      connectionsCheckingInterval: 1_000,
      maxHeaderSize: 16 * 1024,
      // Host is checked in checkFraming, so a missing one gets the gateway's error body.
      requireHostHeader: false,
    },
    handler,
  );
  // One more than allowed, so the handler sees the overflow and answers 431 instead of Node
  // silently dropping the extra lines (a late Authorization among them).
  server.maxHeadersCount = limits.maxHeaderCount + 1;
  // Without this Node answers `100 Continue` before any check has run; the handler sends it
  // only once the request is accepted.
  server.on('checkContinue', handler);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    writeRawError(socket, clientErrorCode(error.code), pickRequestId(undefined));
  });
  return server;
}

function clientErrorCode(code: string | undefined): ErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT')
    return 'request_timeout';
  return 'bad_request';
}

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

export interface GatewayServer {
  readonly server: Server;
  /** Requests received and not yet answered (their response not closed): what an exit now cuts. */
  inFlight(): number;
}

export function createGatewayServer(handler: RequestHandler, limits: ServerLimits): GatewayServer {
  // One integer and one shared listener per request, on the hot path: no closure per request.
  let inFlight = 0;
  const settled = (): void => {
    inFlight -= 1;
  };
  const counted: RequestHandler = (req, res) => {
    inFlight += 1;
    // 'close' comes once per response, whether it ended or its connection went away.
    res.on('close', settled);
    handler(req, res);
  };
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
    counted,
  );
  // One more than allowed, so the handler sees the overflow and answers 431 instead of Node
  // silently dropping the extra lines (a late Authorization among them).
  server.maxHeadersCount = limits.maxHeaderCount + 1;
  // Without this Node answers `100 Continue` before any check has run; the handler sends it
  // only once the request is accepted.
  server.on('checkContinue', counted);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    writeRawError(socket, clientErrorCode(error.code), pickRequestId(undefined));
  });
  return { server, inFlight: () => inFlight };
}

function clientErrorCode(code: string | undefined): ErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT')
    return 'request_timeout';
  return 'bad_request';
}

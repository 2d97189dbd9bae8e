import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_CATALOGUE, type ErrorCode } from './error-codes.js';
import type { GatewayError } from './gateway-error.js';

/** The error envelope (openapi/api-schemas' errorEnvelopeSchema; a test keeps them equal). */
export interface ErrorEnvelopeBody {
  result: 'error';
  status: number;
  error: { code: ErrorCode; message: string };
  request_id: string;
}

/**
 * The envelope's JSON. `message` defaults to the catalogue's; writeError passes the error's
 * own message, which differs only when a GatewayError was given a fixed override.
 */
export function errorBody(
  code: ErrorCode,
  requestId: string,
  message: string = ERROR_CATALOGUE[code].message,
): string {
  const { status } = ERROR_CATALOGUE[code];
  const body: ErrorEnvelopeBody = {
    result: 'error',
    status,
    error: { code, message },
    request_id: requestId,
  };
  return JSON.stringify(body);
}

/**
 * Writes an error's response by `write`, never throwing: when the response has already
 * started (an upstream reset mid-body), the socket is destroyed so the client sees the
 * truncation instead of a response that looks complete. A response already sent whole (the
 * request was answered before this error came) is left as it is: one per request.
 */
export function writeErrorWith(res: ServerResponse, write: () => void): void {
  if (res.writableEnded) return;
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  try {
    write();
  } catch {
    res.destroy();
  }
}

/**
 * The headers an error's answer carries whatever its body (the JSON envelope, a portal page):
 * Allow, Retry-After, and Connection: close where the connection must not be reused. Not the
 * challenges: only the API's 401 asks for credentials.
 */
export function errorHeaders(error: GatewayError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error.allow !== undefined) headers.allow = error.allow.join(', ');
  if (error.retryAfterSec !== undefined) headers['retry-after'] = String(error.retryAfterSec);
  // After a 400 the framing itself may be off, after a 408 or a 413 a body is left unread:
  // the connection is not reused (RFC 9110 §15.5.9: a 408 closes it).
  if (error.status === 400 || error.status === 408 || error.status === 413)
    headers.connection = 'close';
  return headers;
}

/** The one place an error of the API becomes a response: the JSON envelope (writeErrorWith). */
export function writeError(res: ServerResponse, error: GatewayError, requestId: string): void {
  writeErrorWith(res, () => {
    const body = errorBody(error.code, requestId, error.message);
    const headers: Record<string, string | string[]> = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
      'x-request-id': requestId,
      ...errorHeaders(error),
    };
    if (error.challenges !== undefined && error.challenges.length > 0)
      headers['www-authenticate'] = [...error.challenges];
    res.writeHead(error.status, headers);
    res.end(res.req.method === 'HEAD' ? undefined : body);
  });
}

/**
 * For errors the HTTP parser raises before a request object exists (`message`: a fixed
 * override of the catalogue's, as GatewayErrorOptions.message).
 */
export function writeRawError(
  socket: Socket,
  code: ErrorCode,
  requestId: string,
  message?: string,
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = errorBody(code, requestId, message);
  const { status } = ERROR_CATALOGUE[code];
  socket.write(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'cache-control: no-store\r\n' +
      `x-request-id: ${requestId}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
  // Closed once the answer is written, not only ended: Node's server allows half-open
  // connections, so after a bare end() a client that never closes its side (a silent one
  // that got 408, say) would hold the descriptor for as long as it likes.
  socket.destroySoon();
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
};

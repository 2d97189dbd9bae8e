import type { IncomingMessage } from 'node:http';
import type { ErrorCode } from '../errors/error-codes.js';

/**
 * Request-level refusals that Node's parser lets through (see facts): a second Host or
 * Authorization line (Node keeps the first, another hop may keep the last),
 * Transfer-Encoding on HTTP/1.0 or in any form but `chunked`, a Connection header naming the
 * body's framing, a body on GET/HEAD, and more header lines than configured (Node silently
 * drops lines past maxHeadersCount, a late Authorization included, so the limit is enforced
 * here and answered with 431).
 */
export function checkFraming(req: IncomingMessage, maxHeaderCount: number): ErrorCode | undefined {
  const raw = req.rawHeaders;
  if (raw.length > maxHeaderCount * 2) return 'headers_too_large';
  if (req.httpVersionMajor !== 1) return 'bad_request';
  let hosts = 0;
  let authorizations = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations += 1;
  }
  // RFC 9112 §3.2: exactly one Host on HTTP/1.1 (at most one on 1.0).
  if (hosts > 1 || (hosts === 0 && req.httpVersionMinor === 1)) return 'bad_request';
  if (authorizations > 1) return 'malformed_authorization';
  const transferEncoding = req.headers['transfer-encoding'];
  if (transferEncoding !== undefined) {
    if (req.httpVersionMinor === 0 || transferEncoding.trim().toLowerCase() !== 'chunked')
      return 'bad_request';
  }
  // A Connection header that names the body's framing asks the next hop to drop it, and the
  // body with it would be read as another request; nginx, Envoy and Caddy frame every body
  // they forward. No client has a reason to name them (RFC 9110 §7.6.1: Connection names
  // options of this connection, and these two are the message's own).
  const connection = req.headers.connection;
  if (connection !== undefined && namesFraming(connection)) return 'bad_request';
  if (req.method === 'GET' || req.method === 'HEAD') {
    const length = req.headers['content-length'];
    if (transferEncoding !== undefined || (length !== undefined && length !== '0'))
      return 'bad_request';
  }
  return undefined;
}

/** `keep-alive` and `close`, the values clients send, are told at once. */
function namesFraming(connection: string): boolean {
  if (connection.length < 14) return false;
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === 'content-length' || name === 'transfer-encoding') return true;
  }
  return false;
}

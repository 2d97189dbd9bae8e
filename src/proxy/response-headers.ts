import type { IncomingHttpHeaders } from 'node:http';

const RESPONSE_HOP_BY_HOP = [
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'trailer',
  'upgrade',
];

/**
 * Makes an upstream's response headers fit for the client, in place. RFC 9110 §7.6.1: the
 * hop-by-hop fields, and those the upstream's Connection header names, belong to its hop
 * to us. Connection itself is between the client and us: answered for our side of it,
 * or a client that sent `Connection: close` would be kept open against RFC 9112 §9.6.
 */
export function cleanResponseHeaders(
  headers: IncomingHttpHeaders,
  keepAlive: boolean,
  requestId: string,
): void {
  // The usual values (Node sends `keep-alive` on every response) name nothing to forward,
  // so only other values are taken apart.
  const { connection } = headers;
  if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close')
    for (const name of connection.split(',')) delete headers[name.trim().toLowerCase()];
  for (const name of RESPONSE_HOP_BY_HOP) delete headers[name];
  headers.connection = keepAlive ? 'keep-alive' : 'close';
  headers['x-request-id'] = requestId;
}

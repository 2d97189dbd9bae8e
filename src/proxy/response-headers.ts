import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

const RESPONSE_HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/**
 * Writes an upstream's response head to the client, its headers made fit for the client in
 * place. RFC 9110 §7.6.1: Connection, the hop-by-hop fields and those the upstream's
 * Connection names belong to its hop to us. Connection and Keep-Alive are Node's to write
 * for our side, from `res.shouldKeepAlive` (false once a drain began or the client sent
 * `Connection: close`, RFC 9112 §9.6): Node writes its `Keep-Alive: timeout=N` only when no
 * Connection header was set, and a drain counts on clients having been told that timeout.
 * Transfer-Encoding goes too: Node frames the body itself (chunked or by length).
 */
export function writeProxiedHead(
  res: ServerResponse,
  statusCode: number,
  statusMessage: string | undefined,
  headers: IncomingHttpHeaders,
  requestId: string,
): void {
  // The usual values (Node sends `keep-alive` on every response) name nothing to strip,
  // so only other values are taken apart.
  const { connection } = headers;
  if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close')
    for (const name of connection.split(',')) delete headers[name.trim().toLowerCase()];
  // A delete only where there is something to delete: no shape change for the rest.
  for (const name of RESPONSE_HOP_BY_HOP) if (headers[name] !== undefined) delete headers[name];
  headers['x-request-id'] = requestId;
  if (statusMessage === undefined || statusMessage === '') res.writeHead(statusCode, headers);
  else res.writeHead(statusCode, statusMessage, headers);
}

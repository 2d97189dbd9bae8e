import type { IncomingHttpHeaders, OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { Exchange } from './forwarder.js';

const RESPONSE_HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Writes an upstream's response head to the client, without the fields that belong to the
 * upstream's hop to us. RFC 9110 §7.6.1: Connection, the hop-by-hop fields and those the
 * upstream's Connection names. Connection and Keep-Alive are Node's to write for our side,
 * from `res.shouldKeepAlive` (false once a drain began or the client sent
 * `Connection: close`, RFC 9112 §9.6): Node writes its `Keep-Alive: timeout=N` only when no
 * Connection header was set, and a drain counts on clients having been told that timeout.
 * Transfer-Encoding goes too: Node frames the body itself (chunked or by length).
 *
 * The head is handed to Node as one flat [name, value, ...] list built in one pass: deleting
 * the hop-by-hop fields from the parsed object (Node's upstream sends two on every response)
 * turned it into a slow dictionary that writeHead then walked, several times the cost. The
 * gateway's own fields join that list for the same reason: with any field set on the
 * response before, writeHead removes and re-adds each field of the list one by one.
 */
export function writeProxiedHead(
  res: ServerResponse,
  statusCode: number,
  statusMessage: string | undefined,
  headers: IncomingHttpHeaders,
  exchange: Pick<Exchange, 'requestId' | 'responseFields'>,
): void {
  // The usual values (Node sends `keep-alive` on every response) name nothing to strip,
  // so only other values are taken apart.
  const { connection } = headers;
  const named =
    connection === undefined || connection === 'keep-alive' || connection === 'close'
      ? undefined
      : connection.split(',').map((name) => name.trim().toLowerCase());
  const fields: OutgoingHttpHeader[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (
      value === undefined ||
      RESPONSE_HOP_BY_HOP.has(name) ||
      name === 'x-request-id' ||
      named?.includes(name) === true
    )
      continue;
    fields.push(name, value);
  }
  // The gateway's request id, in place of any the upstream sent, and its own fields.
  fields.push('x-request-id', exchange.requestId, ...exchange.responseFields);
  if (statusMessage === undefined || statusMessage === '') res.writeHead(statusCode, fields);
  else res.writeHead(statusCode, statusMessage, fields);
}

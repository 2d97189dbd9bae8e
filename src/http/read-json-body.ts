import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors/gateway-error.js';
import { expectsContinue } from './expects-continue.js';

const JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * Reads a small JSON body for the gateway's own endpoints: 415 unless it is JSON, 413 past
 * `maxBytes` (checked on Content-Length before reading, and again while reading), 400 when
 * it does not parse (with `malformedMessage`, a fixed sentence of src/errors, when given).
 * `100 Continue` is sent only here, once those checks have passed. Resolves undefined when
 * there is no body.
 */
export async function readJsonBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  malformedMessage?: string,
): Promise<unknown> {
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return undefined;
  if (!JSON_TYPE.test(req.headers['content-type'] ?? ''))
    throw new GatewayError('unsupported_media_type');
  if (length !== undefined && Number(length) > maxBytes)
    throw new GatewayError('payload_too_large');
  if (expectsContinue(req.headers)) res.writeContinue();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new GatewayError('payload_too_large');
    chunks.push(chunk);
  }
  try {
    return JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)),
    ) as unknown;
  } catch (error) {
    throw new GatewayError('bad_request', {
      cause: error,
      ...(malformedMessage === undefined ? {} : { message: malformedMessage }),
    });
  }
}

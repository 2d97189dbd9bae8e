import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors/gateway-error.js';
import { expectsContinue } from '../http/expects-continue.js';

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * A page's form, as the browser posts it (`application/x-www-form-urlencoded`, the WHATWG URL
 * standard's parser), `100 Continue` sent once its head passes: 415 for another type, 413 past `maxBytes` (on Content-Length before
 * reading, and again while reading), 400 for bytes that are not UTF-8. An empty body is an
 * empty form.
 */
export async function readForm(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<URLSearchParams> {
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return new URLSearchParams();
  if (!FORM_TYPE.test(req.headers['content-type'] ?? ''))
    throw new GatewayError('unsupported_media_type', { message: FORM_TYPE_MESSAGE });
  if (length !== undefined && Number(length) > maxBytes)
    throw new GatewayError('payload_too_large');
  // Only now, with the form's head accepted, may a client that asked send the body.
  if (expectsContinue(req.headers)) res.writeContinue();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new GatewayError('payload_too_large');
    chunks.push(chunk);
  }
  try {
    return new URLSearchParams(
      new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)),
    );
  } catch (error) {
    throw new GatewayError('bad_request', { cause: error });
  }
}

/** 415 on a portal page: its forms post url-encoded, not JSON. */
export const FORM_TYPE_MESSAGE = 'The form must be sent as application/x-www-form-urlencoded.';

/** The one value of `name`; undefined when absent or given more than once. */
export function oneField(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors/gateway-error.js';
import { expectsContinue } from './expects-continue.js';

const JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/** What a body of the gateway's own endpoints or pages must be, and what it is told if not. */
export interface BodyRules {
  readonly maxBytes: number;
  /** Content-Type, matched whole: 415 otherwise. */
  readonly type: RegExp;
  /** The 415's sentence (a fixed one of src/errors); the catalogue's default when absent. */
  readonly typeMessage?: string;
  /** The 400's sentence for a body that is not what it should be; likewise. */
  readonly malformedMessage?: string;
}

/** The 400 of a malformed body, with the rules' sentence when they give one. */
function malformed(rules: Pick<BodyRules, 'malformedMessage'>, cause: unknown): GatewayError {
  const { malformedMessage: message } = rules;
  return new GatewayError('bad_request', { cause, ...(message === undefined ? {} : { message }) });
}

/**
 * Reads a small body as UTF-8 text: 415 unless its type is `rules.type`, 413 past
 * `rules.maxBytes` (checked on Content-Length before reading, and again while reading), 400
 * for bytes that are not UTF-8. `100 Continue` is sent only here, once those checks have
 * passed. Resolves undefined when there is no body.
 */
export async function readTextBody(
  req: IncomingMessage,
  res: ServerResponse,
  rules: BodyRules,
): Promise<string | undefined> {
  const { maxBytes } = rules;
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return undefined;
  if (!rules.type.test(req.headers['content-type'] ?? ''))
    throw new GatewayError(
      'unsupported_media_type',
      rules.typeMessage === undefined ? {} : { message: rules.typeMessage },
    );
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
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch (error) {
    throw malformed(rules, error);
  }
}

/**
 * Reads a small JSON body for the gateway's own endpoints (readTextBody's checks): 400 when
 * it does not parse, with `malformedMessage`, a fixed sentence of src/errors, when given.
 * Resolves undefined when there is no body.
 */
export async function readJsonBody(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  malformedMessage?: string,
): Promise<unknown> {
  const rules = {
    maxBytes,
    type: JSON_TYPE,
    ...(malformedMessage === undefined ? {} : { malformedMessage }),
  };
  const text = await readTextBody(req, res, rules);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw malformed(rules, error);
  }
}

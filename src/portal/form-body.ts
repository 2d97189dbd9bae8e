import type { IncomingMessage, ServerResponse } from 'node:http';
import { readTextBody } from '../http/read-json-body.js';

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * A page's form, as the browser posts it (`application/x-www-form-urlencoded`, the WHATWG URL
 * standard's parser), with readTextBody's checks: 415 for another type, 413 past `maxBytes`,
 * 400 for bytes that are not UTF-8, `100 Continue` once its head passes. An empty body is an
 * empty form.
 */
export async function readForm(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<URLSearchParams> {
  const text = await readTextBody(req, res, {
    maxBytes,
    type: FORM_TYPE,
    typeMessage: FORM_TYPE_MESSAGE,
  });
  return new URLSearchParams(text ?? '');
}

/** 415 on a portal page: its forms post url-encoded, not JSON. */
const FORM_TYPE_MESSAGE = 'The form must be sent as application/x-www-form-urlencoded.';

/** The one value of `name`; undefined when absent or given more than once. */
export function oneField(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

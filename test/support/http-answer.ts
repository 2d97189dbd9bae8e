/**
 * The one shape of an HTTP answer in the tests, however it was read: with fetch
 * (fromFetch), with node:http (send) or off a raw socket (rawRequest).
 */
export interface HttpAnswer {
  readonly status: number;
  /**
   * Lower-case names. A header that came more than once is an array, in arrival order
   * (send and rawRequest; fetch joins repeats with ", ", so fromFetch never makes arrays).
   */
  readonly headers: Record<string, string | string[]>;
  /** The body, decoded as UTF-8 ('' for none). */
  readonly body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown;
}

export async function fromFetch(res: Response): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const body = await res.text();
  return { status: res.status, headers, body, json: parseJson(body) };
}

/** Headers from alternating name/value lines (node's rawHeaders), repeats kept apart. */
export function headersFromLines(
  lines: readonly (readonly [string, string])[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [rawName, value] of lines) {
    const name = rawName.toLowerCase();
    const previous = headers[name];
    if (previous === undefined) headers[name] = value;
    else headers[name] = Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return headers;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The body of an error envelope without its request_id, to compare two answers. */
export function withoutRequestId(body: unknown): unknown {
  if (body === null || typeof body !== 'object') return body;
  const rest: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  delete rest.request_id;
  return rest;
}

/** The headers that must match between two answers that may not differ (ids and dates aside). */
export function comparableHeaders(headers: Record<string, string | string[]>): unknown {
  const rest = { ...headers };
  delete rest['x-request-id'];
  delete rest.date;
  return rest;
}

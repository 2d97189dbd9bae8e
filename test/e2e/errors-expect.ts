import { expect } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors/error-codes.js';
import type { EchoUpstream, RecordedRequest } from '../support/echo-upstream.js';

/** One shape for answers read with fetch and with the raw socket client. */
export interface HttpResult {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
}

export async function fromFetch(res: Response): Promise<HttpResult> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: res.status, headers, body: await res.text() };
}

export function header(result: HttpResult, name: string): string | undefined {
  const value = result.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * A gateway-made error: the status of the code, the whole envelope (nothing more, nothing
 * less), a request id equal to the X-Request-Id header, JSON, and never cacheable.
 */
export function expectGatewayError(result: HttpResult, code: ErrorCode): void {
  const { status, message } = ERROR_CATALOGUE[code];
  const requestId = result.headers['x-request-id'];
  expect(typeof requestId === 'string' && requestId.length > 0, 'one X-Request-Id header').toBe(
    true,
  );
  expect({ status: result.status, body: JSON.parse(result.body) as unknown }).toEqual({
    status,
    body: { result: 'error', status, error: { code, message }, request_id: requestId },
  });
  expect(result.headers['cache-control']).toBe('no-store');
  expect(header(result, 'content-type')).toMatch(/^application\/json/);
}

/** Snapshot of what the upstream has seen so far; `since()` is what arrived after it. */
export function upstreamMark(upstream: EchoUpstream): { since(): RecordedRequest[] } {
  const count = upstream.received.length;
  return { since: () => upstream.received.slice(count) };
}

export const BASIC_CHALLENGE = 'Basic realm="accounts-gateway", charset="UTF-8"';
export const BEARER_CHALLENGE = 'Bearer realm="accounts-gateway"';
export const BEARER_REJECTED = 'Bearer realm="accounts-gateway", error="invalid_token"';

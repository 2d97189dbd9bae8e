import { expect } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors/error-codes.js';
import type { HttpAnswer } from './http-answer.js';

/** What node:crypto's randomUUID() makes: a version 4, variant 1 UUID in lower case. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** An X-Request-Id the gateway made itself: randomUUID() (src/http/request-id.ts). */
export const GENERATED_REQUEST_ID = UUID_V4;

export const BASIC_CHALLENGE = 'Basic realm="accounts-gateway", charset="UTF-8"';
export const BEARER_CHALLENGE = 'Bearer realm="accounts-gateway"';
export const BEARER_REJECTED = 'Bearer realm="accounts-gateway", error="invalid_token"';

/** The envelope of a gateway-made error, as the body parses. */
export function errorEnvelope(
  code: ErrorCode,
  requestId: unknown,
  message: string = ERROR_CATALOGUE[code].message,
): unknown {
  return {
    result: 'error',
    status: ERROR_CATALOGUE[code].status,
    error: { code, message },
    request_id: requestId,
  };
}

export interface ExpectedError {
  /** The client's X-Request-Id, kept; without it the id must be one the gateway generated. */
  requestId?: string;
  /** A fixed message that replaces the catalogue's for this code. */
  message?: string;
}

/**
 * A gateway-made error: the status of the code, the whole envelope (nothing more, nothing
 * less), one X-Request-Id (the client's, or a generated UUID) equal to the body's request
 * id, the envelope's exact content type, and never cacheable.
 */
export function expectGatewayError(
  answer: HttpAnswer,
  code: ErrorCode,
  expected: ExpectedError = {},
): void {
  const requestId = answer.headers['x-request-id'];
  if (expected.requestId === undefined) expect(requestId).toMatch(GENERATED_REQUEST_ID);
  else expect(requestId).toBe(expected.requestId);
  expect({ status: answer.status, body: answer.json }).toEqual({
    status: ERROR_CATALOGUE[code].status,
    body: errorEnvelope(code, requestId, expected.message),
  });
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
}

/**
 * A login throttle's Retry-After: the seconds left of a `windowSec` window whose first
 * failure came after `windowOpenedAt` and before `answeredAt` (Date.now() values), rounded
 * up as src/protection/login-throttle.ts does. With both taken close around the requests,
 * this is the exact value give or take the second the clock may tick over.
 */
export function expectThrottleRetryAfter(
  value: string | string[] | undefined,
  windowSec: number,
  windowOpenedAt: number,
  answeredAt: number,
): void {
  const least = Math.max(1, Math.ceil((windowOpenedAt + windowSec * 1000 - answeredAt) / 1000));
  const allowed = Array.from({ length: windowSec - least + 1 }, (_, i) => String(least + i));
  expect(allowed).toContain(value);
}

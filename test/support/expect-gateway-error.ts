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
 * A lockout's Retry-After for a lock of `lockSec` started just before the answer: the whole
 * lock, or a second less when the clock ticked over in between.
 */
export function expectLockRetryAfter(value: string | string[] | undefined, lockSec: number): void {
  expect([String(lockSec - 1), String(lockSec)]).toContain(value);
}

import { ERROR_CATALOGUE, type ErrorCode } from './error-codes.js';

export interface GatewayErrorOptions {
  cause?: unknown;
  /** RFC 7235 challenges for a 401 (one `WWW-Authenticate` header each). */
  challenges?: readonly string[];
  /** For 405: the methods the route accepts. */
  allow?: readonly string[];
  /** For 429/503: seconds the client should wait. */
  retryAfterSec?: number;
}

/**
 * The one error family of the gateway. Foreign errors (jose, ioredis, sockets) are turned
 * into a GatewayError where they enter, keeping the original as `cause` for the logs.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly challenges: readonly string[] | undefined;
  readonly allow: readonly string[] | undefined;
  readonly retryAfterSec: number | undefined;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    super(
      ERROR_CATALOGUE[code].message,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = 'GatewayError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.challenges = options.challenges;
    this.allow = options.allow;
    this.retryAfterSec = options.retryAfterSec;
  }
}

export function toGatewayError(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError('internal_error', { cause: error });
}

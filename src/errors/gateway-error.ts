import { ERROR_CATALOGUE, type ErrorCode } from './error-codes.js';

export interface GatewayErrorOptions {
  cause?: unknown;
  /** RFC 7235 challenges for a 401 (one `WWW-Authenticate` header each). */
  challenges?: readonly string[];
  /** For 405: the methods the route accepts. */
  allow?: readonly string[];
  /** For 429/503: seconds the client should wait. */
  retryAfterSec?: number;
  /**
   * Replaces the catalogue's message for this one error: a fixed sentence written in the
   * source, never client input (no header value, path or key id), so the body still cannot
   * reflect or leak anything. Status and code stay the catalogue's.
   */
  message?: string;
}

/**
 * The fixed overrides of a catalogue message (`GatewayErrorOptions.message`), kept beside the
 * catalogue so that every sentence a client can read is written in src/errors.
 *
 * `DELETE /keys/{id}` when no pair with that id belongs to the caller: the path matched, so
 * the catalogue's "No resource matches the request path." would mislead. A pair of another
 * subject gets the same sentence as one that does not exist.
 */
export const KEY_NOT_FOUND_MESSAGE = 'No key pair with this id belongs to the caller.';

/**
 * The one error family of the gateway. Foreign errors (jose, ioredis, sockets) are turned
 * into a GatewayError where they enter, keeping the original as `cause` for the logs.
 * `message` is what the client reads: the catalogue's, unless a fixed override was given.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly challenges: readonly string[] | undefined;
  readonly allow: readonly string[] | undefined;
  readonly retryAfterSec: number | undefined;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    super(
      options.message ?? ERROR_CATALOGUE[code].message,
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

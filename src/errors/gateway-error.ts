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
 * catalogue. A sentence that states the rule of another module (a bound, a format) lives with
 * that rule and reads its numbers from it: EXPIRY_MESSAGES in credentials/key-expiry.ts,
 * KEYS_PAGE_MESSAGES in endpoints/key-page-query.ts, LOGIN_MESSAGES in openapi/api-schemas.ts.
 *
 * `DELETE /keys/{id}` when no pair with that id belongs to the caller: the path matched, so
 * the catalogue's "No resource matches the request path." would mislead. A pair of another
 * subject gets the same sentence as one that does not exist.
 */
export const KEY_NOT_FOUND_MESSAGE = 'No key pair with this id belongs to the caller.';

/**
 * The forward-auth check (`forwardAuth.path`): 403 forbidden to a peer that is not one of
 * `server.trustedProxies`; 400 bad_request when the check names no original request, or
 * names it more than one way.
 */
export const FORWARD_AUTH_MESSAGES = {
  untrusted:
    'Forward-auth checks are answered only to the trusted proxies (server.trustedProxies).',
  unnamed:
    'A forward-auth check names the original request one way: X-Forwarded-Method with X-Forwarded-Uri, X-Original-Method with X-Original-URI, or the path after the check path.',
} as const;

/**
 * 400 bad_request to a request in plain HTTP on the TLS listener (nginx answers "The plain
 * HTTP request was sent to HTTPS port"): the client needs https://, not another request.
 */
export const PLAIN_HTTP_MESSAGE =
  'This port speaks HTTPS only: the request was sent in plain HTTP; use an https:// URL.';

/** `POST /keys` 403 forbidden: the body asked for a scope the caller does not hold. */
export const SCOPE_ESCALATION_MESSAGE = 'A new key pair can only carry scopes the caller holds.';

/** `POST /keys` 400 bad_request: the body, or its `label`, cannot be used. */
export const CREATE_KEY_MESSAGES = {
  body: 'The body must be a JSON object (label, expires_in or expires_at, scopes), or empty.',
  label: 'label must be a string of at most 200 characters, without control characters.',
} as const;

/** `POST /keys` 400 bad_request: `scopes` is not a list of different scope tokens. */
export const SCOPES_MESSAGE =
  'scopes must be an array of at most 64 different scope tokens (RFC 6749 §3.3).';

/**
 * `POST /keys` 400 bad_request from a Basic caller whose pair expires: the body asked for a
 * later expiry than the caller's own (without one, the new pair inherits the caller's).
 */
export const OUTLIVE_MESSAGE =
  "A new key pair cannot outlive the caller's pair: ask for an expiry no later than its own, or for none to inherit it.";

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

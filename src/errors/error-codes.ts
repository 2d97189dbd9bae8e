/**
 * The closed catalogue of errors the gateway itself answers with. Each code maps to one
 * HTTP status and one fixed message: messages never echo client input (a header value,
 * a path, a key id), so an error body can never reflect or leak anything.
 */
export const ERROR_CATALOGUE = {
  malformed_authorization: { status: 400, message: 'The Authorization header is malformed.' },
  invalid_path: { status: 400, message: 'The request path is not allowed.' },
  bad_request: { status: 400, message: 'The request is malformed.' },
  missing_credentials: { status: 401, message: 'Credentials are required.' },
  invalid_credentials: { status: 401, message: 'The credentials are not valid.' },
  invalid_token: { status: 401, message: 'The bearer token is not valid.' },
  token_expired: { status: 401, message: 'The bearer token has expired.' },
  forbidden: { status: 403, message: 'The credentials do not allow this request.' },
  not_found: { status: 404, message: 'No resource matches the request path.' },
  method_not_allowed: { status: 405, message: 'The method is not allowed on this resource.' },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  conflict: {
    status: 409,
    message: 'This is the last active key pair; revoke it with ?force=true if that is intended.',
  },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  limit_exceeded: {
    status: 422,
    message: 'The maximum number of active key pairs is reached; revoke one first.',
  },
  rate_limited: { status: 429, message: 'Too many requests; retry later.' },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  internal_error: { status: 500, message: 'The gateway failed to process the request.' },
  upstream_unavailable: { status: 502, message: 'The upstream service is unavailable.' },
  credential_store_unavailable: {
    status: 503,
    message: 'Credentials cannot be checked right now.',
  },
  overloaded: { status: 503, message: 'The gateway is overloaded; retry later.' },
  draining: {
    status: 503,
    message: 'The gateway is shutting down; retry on another instance.',
  },
  upstream_timeout: { status: 504, message: 'The upstream service did not answer in time.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

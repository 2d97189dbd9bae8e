/**
 * Why an upstream exchange failed, as gateway_upstream_errors_total and the access line's
 * `upstream_error` name it: connect_refused (nothing listens), connect_timeout (no connection
 * within upstreams.<name>.connectTimeoutMs), timeout (connected, no answer within timeoutMs),
 * reset (the connection cut or closed mid-exchange), tls (the handshake or the certificate
 * failed), other (anything else: a name that does not resolve, a garbage reply).
 */
export type UpstreamErrorKind =
  'connect_refused' | 'connect_timeout' | 'timeout' | 'reset' | 'tls' | 'other';

export const UPSTREAM_ERROR_KINDS: readonly UpstreamErrorKind[] = [
  'connect_refused',
  'connect_timeout',
  'timeout',
  'reset',
  'tls',
  'other',
];

const BY_CODE: ReadonlyMap<string, UpstreamErrorKind> = new Map(
  Object.entries({
    ECONNREFUSED: 'connect_refused',
    // http-proxy-3's connectTimeout, undici's connectTimeout.
    ECONNECT_TIMEOUT: 'connect_timeout',
    UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
    ETIMEDOUT: 'connect_timeout',
    UND_ERR_HEADERS_TIMEOUT: 'timeout',
    UND_ERR_BODY_TIMEOUT: 'timeout',
    ECONNRESET: 'reset',
    EPIPE: 'reset',
    UND_ERR_SOCKET: 'reset',
    UND_ERR_CLOSED: 'reset',
    DEPTH_ZERO_SELF_SIGNED_CERT: 'tls',
    SELF_SIGNED_CERT_IN_CHAIN: 'tls',
    UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'tls',
    UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'tls',
    CERT_HAS_EXPIRED: 'tls',
    CERT_NOT_YET_VALID: 'tls',
  } as const),
);

/**
 * The kind of an engine's error. `timedOut`: the engine's own timer fired (http-proxy-3
 * reports it as a reset, see proxy/http-proxy-forwarder.ts). Errors are read by their code,
 * or their cause's.
 */
export function upstreamErrorKind(error: unknown, timedOut = false): UpstreamErrorKind {
  if (timedOut) return 'timeout';
  const code = codeOf(error) ?? codeOf((error as { cause?: unknown } | undefined)?.cause);
  if (code === undefined) return 'other';
  const known = BY_CODE.get(code);
  if (known !== undefined) return known;
  return code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('CERT_')
    ? 'tls'
    : 'other';
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

import type { ServerResponse } from 'node:http';
import type { Identity } from '../identity/identity.js';

/**
 * How a proxy named the request it asks about: Caddy `forward_auth` and Traefik ForwardAuth send
 * X-Forwarded-Method and X-Forwarded-Uri; nginx `auth_request` sends what its config sets
 * (X-Original-Method and X-Original-URI, see docs/forward-auth.md); Envoy `ext_authz` sends the
 * original request line itself, at the check's path followed by the original path.
 */
export type ForwardAuthShape = 'x-forwarded' | 'x-original' | 'request-line';

export type OriginalRequest =
  | {
      readonly kind: 'original';
      readonly method: string;
      /** The original request target (path and query), raw: the route table checks it. */
      readonly target: string;
      readonly shape: ForwardAuthShape;
    }
  /** The peer is not a trusted proxy: its answer would rest on headers anyone can write. */
  | { readonly kind: 'untrusted' }
  /** No original request named, or more than one way of naming it. */
  | { readonly kind: 'unnamed' };

export interface ForwardAuthRequest {
  /** The peer is in `server.trustedProxies`. */
  readonly peerTrusted: boolean;
  /** The check's own method. */
  readonly method: string;
  /**
   * Called under the check's path (`<path>/<rest>`, Envoy): the rest after `<path>/`; undefined
   * when called at the path itself.
   */
  readonly rest: string | undefined;
  /** The raw query of the check's own target ('' or `?...`). */
  readonly query: string;
  /** The request's headers, each name with every line it came on (IncomingMessage.headersDistinct). */
  readonly headers: Readonly<Record<string, readonly string[] | undefined>>;
}

const NAMING_HEADERS = {
  'x-forwarded': { method: 'x-forwarded-method', uri: 'x-forwarded-uri' },
  'x-original': { method: 'x-original-method', uri: 'x-original-uri' },
} as const;
const NAMING_SHAPES = Object.keys(NAMING_HEADERS) as (keyof typeof NAMING_HEADERS)[];

// RFC 9110 §9.1: a method is a token (§5.6.2).
const METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The request a forward-auth check asks about, or why it names none. Exactly one way of
 * naming it is accepted: a proxy passes its client's headers on to the check (Caddy,
 * Traefik and nginx all do), so a client behind Caddy could add X-Original-URI naming a
 * route it may use; were either family preferred, the answer would be about the client's
 * choice of URI. Two ways at once, or a header given twice, name nothing.
 */
export function readOriginalRequest(request: ForwardAuthRequest): OriginalRequest {
  if (!request.peerTrusted) return UNTRUSTED;
  const { headers } = request;
  const present = NAMING_SHAPES.filter(
    (shape) =>
      headers[NAMING_HEADERS[shape].method] !== undefined ||
      headers[NAMING_HEADERS[shape].uri] !== undefined,
  );
  if (request.rest !== undefined) {
    if (present.length > 0 || !METHOD.test(request.method)) return UNNAMED;
    return {
      kind: 'original',
      method: request.method,
      target: `/${request.rest}${request.query}`,
      shape: 'request-line',
    };
  }
  const [shape, other] = present;
  if (shape === undefined || other !== undefined) return UNNAMED;
  const method = once(headers[NAMING_HEADERS[shape].method]);
  const target = once(headers[NAMING_HEADERS[shape].uri]);
  if (method === undefined || !METHOD.test(method) || target === undefined || target === '')
    return UNNAMED;
  return { kind: 'original', method, target, shape };
}

function once(lines: readonly string[] | undefined): string | undefined {
  return lines?.length === 1 ? lines[0] : undefined;
}

const UNTRUSTED = { kind: 'untrusted' } as const;
const UNNAMED = { kind: 'unnamed' } as const;

/**
 * The allow answer: exactly 200 (Envoy allows on nothing else) with an empty body, and the
 * identity for the proxy to copy upstream: the headers the gateway sends its own upstreams
 * (proxy/upstream-headers), and X-Auth-Scopes. `cacheMaxAgeSec` > 0 lets nginx's proxy_cache
 * keep the answer (private: it is one credential's); otherwise nothing may keep it.
 */
export function writeAllowed(
  res: ServerResponse,
  identity: Identity,
  requestId: string,
  cacheMaxAgeSec: number,
): void {
  res.statusCode = 200;
  res.setHeader('x-auth-subject', identity.subject);
  res.setHeader('x-auth-method', identity.method);
  // All four, empty when there is nothing to say (no key for a bearer token, no scope): a
  // proxy copies each named header over the client's, and one the answer lacks would leave
  // the client's own value in place (Caddy 2.6 even sends its unexpanded placeholder).
  res.setHeader('x-auth-key', identity.key ?? '');
  // Scope tokens hold no space (RFC 6749 §3.3): the list is space-delimited like a token's.
  res.setHeader('x-auth-scopes', identity.scopes.join(' '));
  res.setHeader('x-request-id', requestId);
  // nginx's proxy_cache keeps nothing marked private, but X-Accel-Expires, its own header,
  // overrides Cache-Control when it comes first (nginx 1.22 reads them in order): nginx
  // keeps the answer N seconds, and any other cache still sees a private one.
  if (cacheMaxAgeSec > 0) res.setHeader('x-accel-expires', String(cacheMaxAgeSec));
  res.setHeader(
    'cache-control',
    cacheMaxAgeSec > 0 ? `private, max-age=${cacheMaxAgeSec}` : 'no-store',
  );
  res.setHeader('content-length', '0');
  res.end();
}

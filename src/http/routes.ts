import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthScheme } from '../auth/auth-scheme.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { Identity } from '../identity/identity.js';
import type { ClientAddressSource } from '../identity/client-address.js';
import type { RateLimit } from '../protection/rate-policy.js';
import type { Forwarder } from '../proxy/forwarder.js';

interface RouteBase {
  readonly name: string;
  readonly methods: ReadonlySet<string>;
  /** For the `Allow` header of a 405. */
  readonly allow: readonly string[];
  /** Scopes an authenticated caller must hold, all of them (403 forbidden); [] for none. */
  readonly scopes: readonly string[];
}

/** A configured route: authenticated, then forwarded by its upstream's engine. */
export interface ProxyRoute extends RouteBase {
  readonly kind: 'proxy';
  readonly schemes: readonly AuthScheme[];
  readonly forwarder: Forwarder;
  /**
   * The outgoing path before the raw query: the upstream URL's base path and the route's
   * upstreamPath, joined once when the request chain is built.
   */
  readonly pathPrefix: string;
  /** Under a prefix, what comes before the matched rest: `pathPrefix` ending in one `/`. */
  readonly restBase: string;
  /** The route's own rate limit, counted per credential (`routes[].rateLimit`). */
  readonly rateLimit?: RateLimit | undefined;
}

export interface EndpointContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  /** Undefined only for endpoints that take no credentials. */
  readonly identity: Identity | undefined;
  /** The path segment a parameterized endpoint matched (e.g. a key id). */
  readonly param: string | undefined;
  readonly query: string;
  /** The client address and network, as the lockout and the address rate limit count them. */
  readonly client: ClientAddressSource;
}

/** One of the gateway's own endpoints; `schemes: null` means it takes no credentials. */
export interface EndpointRoute extends RouteBase {
  readonly kind: 'endpoint';
  readonly schemes: readonly AuthScheme[] | null;
  handle(context: EndpointContext): Promise<void>;
  /**
   * Writes this endpoint's errors, every one the request handler meets once the route is
   * known (405, 429, the handler's own), in place of the JSON envelope: the portal's pages
   * answer a browser with a page. It must never throw, and must cut the connection when the
   * response has already started (as errors/error-envelope's writeError does).
   */
  writeError?(res: ServerResponse, error: GatewayError, requestId: string): void;
}

/**
 * The forward-auth check (`forwardAuth.path`, and under it for Envoy): it names another
 * request, which the route table then decides as if it had come itself (see forward-auth);
 * it takes any method (Envoy calls it with the original request's).
 */
export interface ForwardAuthRoute {
  readonly kind: 'forward-auth';
  readonly name: string;
  /** `forwardAuth.cacheMaxAgeSec`: how long a proxy may keep an allow answer. */
  readonly cacheMaxAgeSec: number;
}

export type RouteEntry = ProxyRoute | EndpointRoute | ForwardAuthRoute;

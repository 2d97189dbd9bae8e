import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ConnectionOptions } from 'node:tls';
import type { GatewayError } from '../errors/gateway-error.js';
import type { UpstreamErrorKind } from '../errors/upstream-error-kind.js';
import type { RequestBody } from './request-body.js';

/**
 * An https:// upstream's TLS beside Node's defaults: a CA, the name checked and sent in SNI,
 * a client certificate and key. Verification stays on (rejectUnauthorized is never given).
 */
export type UpstreamTls = Pick<ConnectionOptions, 'ca' | 'servername' | 'cert' | 'key'>;

/** A configured upstream, as every forwarding engine needs it. */
export interface UpstreamTarget {
  readonly name: string;
  /** Scheme, host and port only: paths are decided by the route (see basePath). */
  readonly origin: URL;
  /** The path of the configured upstream URL without its trailing slash ('' for `/`). */
  readonly basePath: string;
  /** The Host header the upstream receives. */
  readonly host: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  /** The bound on pooled connections to this upstream. */
  readonly maxSockets: number;
  /** A chunked request body up to this size is read whole and sent with its length. */
  readonly bodyBufferBytes: number;
  readonly tls: UpstreamTls;
}

export function createUpstreamTarget(
  name: string,
  url: URL,
  options: {
    timeoutMs: number;
    connectTimeoutMs: number;
    maxSockets: number;
    bodyBufferBytes: number;
  },
  tls: UpstreamTls = {},
): UpstreamTarget {
  return {
    name,
    origin: new URL(url.origin),
    basePath: url.pathname.replace(/\/+$/, ''),
    host: url.host,
    timeoutMs: options.timeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
    maxSockets: options.maxSockets,
    bodyBufferBytes: options.bodyBufferBytes,
    tls,
  };
}

/** What the gateway decided about one request; the engine only carries it out. */
export interface Exchange {
  /** The whole outgoing path: the route's prefix (base path included) and the raw query. */
  readonly path: string;
  /**
   * Built from the allow-list (see upstream-headers); sent as they are, with the body's
   * framing (Content-Length or Transfer-Encoding) added by the engine from `body`.
   */
  readonly headers: OutgoingHttpHeaders;
  /** How the request's body goes upstream (see request-body). */
  readonly body: RequestBody;
  readonly requestId: string;
  /**
   * The gateway's own fields for the client's response head, `[name, value, …]` (the
   * rate-limit fields): written in the one writeHead of the upstream's head. Set on the
   * response before, they would send each of the upstream's fields through Node's slow path.
   */
  readonly responseFields: readonly string[];
  /** 502 or 504, before the response started; after it, the engine cuts the client socket. */
  readonly onError: (error: GatewayError) => void;
  // What the engine saw, written by it as it happens (plain field writes: the access line
  // and gateway_requests_total's `source` read them once the response is done).
  /** performance.now() when the request was handed to the engine. */
  readonly upstreamStartedAt: number;
  /** The status of the upstream's response head, once it was written to the client. */
  upstreamStatus: number | undefined;
  /** Milliseconds from upstreamStartedAt to the end of the upstream's response, or its failure. */
  upstreamMs: number | undefined;
  upstreamError: UpstreamErrorKind | undefined;
}

/**
 * One upstream's metrics, bound once per upstream (no label lookup per request): the time of
 * each response the upstream completed, and each exchange that failed, by kind.
 */
export interface UpstreamObserver {
  observe(seconds: number): void;
  countError(kind: UpstreamErrorKind): void;
}

export const UNOBSERVED: UpstreamObserver = {
  observe: () => undefined,
  countError: () => undefined,
};

/** Records the end of the upstream's response on the exchange and in its metrics. */
export function upstreamEnded(exchange: Exchange, observer: UpstreamObserver): void {
  const ms = performance.now() - exchange.upstreamStartedAt;
  exchange.upstreamMs = ms;
  observer.observe(ms / 1000);
}

/**
 * Records a failed exchange (before or after the head) on the exchange and in its metrics;
 * once: an engine may report one failure twice (a cut response, then its request's error).
 */
export function upstreamFailed(
  exchange: Exchange,
  observer: UpstreamObserver,
  kind: UpstreamErrorKind,
): void {
  if (exchange.upstreamError !== undefined) return;
  exchange.upstreamMs = performance.now() - exchange.upstreamStartedAt;
  exchange.upstreamError = kind;
  observer.countError(kind);
}

/**
 * A forwarding engine bound to one upstream, made once per configuration. Every engine
 * keeps the same contract: the path and headers exactly as given, hop-by-hop fields out
 * of the response, 502 told from 504 by its own timer, bodies streamed both ways.
 */
export interface Forwarder {
  readonly upstream: UpstreamTarget;
  forward(req: IncomingMessage, res: ServerResponse, exchange: Exchange): void;
  /** Frees pooled connections once the requests in flight are done with them. */
  close(): void;
}

import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ConnectionOptions } from 'node:tls';
import type { GatewayError } from '../errors/gateway-error.js';

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
  readonly tls: UpstreamTls;
}

export function createUpstreamTarget(
  name: string,
  url: URL,
  options: { timeoutMs: number; connectTimeoutMs: number; maxSockets: number },
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
    tls,
  };
}

/** What the gateway decided about one request; the engine only carries it out. */
export interface Exchange {
  /** The whole outgoing path: the route's prefix (base path included) and the raw query. */
  readonly path: string;
  /** Built from the allow-list (see upstream-headers); sent as they are. */
  readonly headers: OutgoingHttpHeaders;
  readonly requestId: string;
  /** 502 or 504, before the response started; after it, the engine cuts the client socket. */
  readonly onError: (error: GatewayError) => void;
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

import {
  Agent,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { createProxyServer } from 'http-proxy-3';
import { GatewayError } from '../errors/gateway-error.js';

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
  readonly agent: Agent;
}

export function createUpstreamTarget(
  name: string,
  url: URL,
  options: { timeoutMs: number; connectTimeoutMs: number; maxSockets: number },
): UpstreamTarget {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: Math.min(options.maxSockets, 256),
    scheduling: 'lifo' as const,
  };
  // Keep-alive: http-proxy-3's default (agent: false) sends `Connection: close` upstream.
  const agent = url.protocol === 'https:' ? new HttpsAgent(agentOptions) : new Agent(agentOptions);
  return {
    name,
    origin: new URL(url.origin),
    basePath: url.pathname.replace(/\/+$/, ''),
    host: url.host,
    timeoutMs: options.timeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
    agent,
  };
}

export interface Exchange {
  readonly upstream: UpstreamTarget;
  /** The route's upstream path and the raw query: decided by the gateway, never the client. */
  readonly path: string;
  readonly headers: OutgoingHttpHeaders;
  readonly requestId: string;
  readonly onError: (error: GatewayError) => void;
}

export interface Forwarder {
  forward(req: IncomingMessage, res: ServerResponse, exchange: Exchange): void;
}

interface ExchangeState {
  readonly exchange: Exchange;
  readonly path: string;
  timedOut: boolean;
}

/** Per-request state rides on the request itself: cheaper for the GC than a WeakMap. */
const STATE = Symbol('accounts-gateway.exchange');
type CarryingRequest = IncomingMessage & { [STATE]?: ExchangeState };

const RESPONSE_HOP_BY_HOP = [
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'trailer',
  'upgrade',
];

export function createForwarder(): Forwarder {
  const proxy = createProxyServer({ xfwd: false, ws: false });

  proxy.on('proxyReq', (proxyReq, req: CarryingRequest) => {
    const state = req[STATE];
    if (state === undefined) return;
    // http-proxy-3 joins paths with its own urlJoin, which drops an empty query (`?`): put
    // back exactly the path decided here while the request line is not yet written.
    if (!proxyReq.headersSent) proxyReq.path = state.path;
    // http-proxy-3 reports its own proxyTimeout as ECONNRESET, like a real reset: keep our
    // own flag so that a timeout answers 504 and a reset 502.
    proxyReq.setTimeout(state.exchange.upstream.timeoutMs, () => {
      state.timedOut = true;
      proxyReq.destroy();
    });
  });

  proxy.on('proxyRes', (proxyRes, req: CarryingRequest, res) => {
    const { headers } = proxyRes;
    // RFC 9110 §7.6.1: the fields the upstream's Connection header names belong to its hop
    // to us and must not reach the client. The usual values (Node sends `keep-alive` on
    // every response) name nothing to forward, so only other values are taken apart.
    const { connection } = headers;
    if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close')
      for (const name of connection.split(',')) delete headers[name.trim().toLowerCase()];
    for (const name of RESPONSE_HOP_BY_HOP) delete headers[name];
    // Connection is between the client and us: answer for our side of it. Otherwise
    // http-proxy-3 copies the upstream's (or says keep-alive) even to a client that sent
    // `Connection: close`, and the connection stays open against RFC 9112 §9.6.
    headers.connection = res.shouldKeepAlive ? 'keep-alive' : 'close';
    const state = req[STATE];
    if (state !== undefined) headers['x-request-id'] = state.exchange.requestId;
    // A reset after the headers went out must reach the client as a cut connection, never
    // as a response that ends cleanly and looks complete.
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });

  const onProxyError = (error: Error, req: CarryingRequest): void => {
    const state = req[STATE];
    if (state === undefined) return;
    const code = (error as NodeJS.ErrnoException).code;
    const timedOut = state.timedOut || code === 'ECONNECT_TIMEOUT';
    state.exchange.onError(
      new GatewayError(timedOut ? 'upstream_timeout' : 'upstream_unavailable', { cause: error }),
    );
  };

  return {
    forward(req: CarryingRequest, res, exchange) {
      const { upstream } = exchange;
      const path = upstream.basePath + exchange.path;
      req[STATE] = { exchange, path, timedOut: false };
      req.url = path;
      req.headers = exchange.headers as IncomingMessage['headers'];
      // toProxy: http-proxy-3 then takes req.url as it is instead of re-parsing it with
      // new URL(), which would re-encode the query and resolve dot segments.
      proxy.web(
        req,
        res,
        {
          target: upstream.origin,
          agent: upstream.agent,
          toProxy: true,
          connectTimeout: upstream.connectTimeoutMs,
        },
        (error, failedReq) => onProxyError(error, failedReq),
      );
    },
  };
}

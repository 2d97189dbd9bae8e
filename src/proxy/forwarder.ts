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
  readonly url: URL;
  /** The Host header the upstream receives. */
  readonly host: string;
  readonly timeoutMs: number;
  readonly agent: Agent;
}

export function createUpstreamTarget(
  name: string,
  url: URL,
  options: { timeoutMs: number; maxSockets: number },
): UpstreamTarget {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: Math.min(options.maxSockets, 256),
    scheduling: 'lifo' as const,
  };
  // Keep-alive: http-proxy-3's default (agent: false) sends `Connection: close` upstream.
  const agent = url.protocol === 'https:' ? new HttpsAgent(agentOptions) : new Agent(agentOptions);
  return { name, url, host: url.host, timeoutMs: options.timeoutMs, agent };
}

export interface Exchange {
  readonly upstream: UpstreamTarget;
  /** The path and raw query the upstream receives, decided by the route, never the client. */
  readonly path: string;
  readonly headers: OutgoingHttpHeaders;
  readonly requestId: string;
  readonly onError: (error: GatewayError) => void;
}

interface ExchangeState extends Exchange {
  timedOut: boolean;
}

export interface Forwarder {
  forward(req: IncomingMessage, res: ServerResponse, exchange: Exchange): void;
}

const RESPONSE_HOP_BY_HOP = [
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'trailer',
  'upgrade',
];

export function createForwarder(options: { connectTimeoutMs: number }): Forwarder {
  const proxy = createProxyServer({
    xfwd: false,
    ws: false,
    connectTimeout: options.connectTimeoutMs,
  });
  const exchanges = new WeakMap<IncomingMessage, ExchangeState>();

  proxy.on('proxyReq', (proxyReq, req) => {
    const state = exchanges.get(req);
    if (state === undefined) return;
    // http-proxy-3 reports its own proxyTimeout as ECONNRESET, like a real reset: keep our
    // own flag so a timeout answers 504 and a reset 502.
    // http-proxy-3 joins the path with its own urlJoin, which drops an empty query (`?`):
    // put back exactly the path we decided, as long as the request line is not yet built.
    if (!proxyReq.headersSent) proxyReq.path = state.path;
    proxyReq.setTimeout(state.upstream.timeoutMs, () => {
      state.timedOut = true;
      proxyReq.destroy();
    });
  });

  proxy.on('proxyRes', (proxyRes, req, res) => {
    const state = exchanges.get(req);
    for (const name of RESPONSE_HOP_BY_HOP) delete proxyRes.headers[name];
    if (state !== undefined) proxyRes.headers['x-request-id'] = state.requestId;
    // A reset after the headers went out must reach the client as a cut connection, never
    // as a response that ends cleanly and looks complete.
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });

  const onProxyError = (error: Error, req: IncomingMessage): void => {
    const state = exchanges.get(req);
    if (state === undefined) return;
    const code = (error as NodeJS.ErrnoException).code;
    const timedOut = state.timedOut || code === 'ECONNECT_TIMEOUT';
    state.onError(
      new GatewayError(timedOut ? 'upstream_timeout' : 'upstream_unavailable', { cause: error }),
    );
  };

  return {
    forward(req, res, exchange) {
      exchanges.set(req, { ...exchange, timedOut: false });
      req.url = exchange.path;
      req.headers = exchange.headers as IncomingMessage['headers'];
      // toProxy: http-proxy-3 then takes req.url as it is instead of re-parsing it with
      // new URL(), which would re-encode the query and resolve dot segments.
      proxy.web(
        req,
        res,
        { target: exchange.upstream.url, agent: exchange.upstream.agent, toProxy: true },
        (error, failedReq) => {
          onProxyError(error, failedReq);
        },
      );
    },
  };
}

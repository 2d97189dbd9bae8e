import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { createProxyServer, type ProxyServer } from 'http-proxy-3';
import { GatewayError } from '../errors/gateway-error.js';
import {
  UNOBSERVED,
  upstreamEnded,
  upstreamFailed,
  type Exchange,
  type Forwarder,
  type UpstreamObserver,
  type UpstreamTarget,
} from './forwarder.js';
import { upstreamErrorKind } from '../errors/upstream-error-kind.js';
import { writeProxiedHead } from './response-headers.js';
import { replayBytes } from './request-body.js';

interface ExchangeState {
  readonly exchange: Exchange;
  readonly res: ServerResponse;
  timedOut: boolean;
  /** The upstream's response, once its head came. */
  response: IncomingMessage | undefined;
}

/**
 * Per-request state rides on the request itself (and on the upstream's response): cheaper
 * for the GC than a WeakMap, and it lets one listener per engine serve every request.
 */
const STATE = Symbol('accounts-gateway.exchange');

/** The head's own part when a response comes without its exchange (none known to happen). */
const NO_EXCHANGE = { requestId: '', responseFields: [] } as const;
type CarryingRequest = IncomingMessage & { [STATE]?: ExchangeState };
/** The upstream request carries what its shared timeout listener needs: no closure. */
type CarryingUpstreamRequest = ClientRequest & { [STATE]?: ExchangeState };

function onUpstreamTimeout(this: CarryingUpstreamRequest): void {
  const state = this[STATE];
  if (state !== undefined) state.timedOut = true;
  this.destroy();
}

/**
 * The product's named engine. Every http-proxy-3 workaround lives here: the outgoing path,
 * the 504 timer, the response's hop-by-hop fields, a reset after the headers.
 */
export function createHttpProxyForwarder(
  upstream: UpstreamTarget,
  observer: UpstreamObserver = UNOBSERVED,
): Forwarder {
  const agent = createUpstreamAgent(upstream);
  const proxy = createUpstreamProxy(upstream, agent);
  const events = upstreamResponseEvents(upstream.timeoutMs, observer);
  proxy.before('web', 'stream', restoreChunkedFraming);
  proxy.on('proxyReq', upstreamRequestSetup(upstream.timeoutMs));
  proxy.on('proxyRes', events.onProxyRes);
  const { onProxyError } = events;

  return {
    upstream,
    forward(req: CarryingRequest, res, exchange) {
      req[STATE] = { exchange, res, timedOut: false, response: undefined };
      req.url = exchange.path;
      const { body, headers } = exchange;
      req.headers = headers as IncomingMessage['headers'];
      // The body-less fast path: node:http frames an empty body itself, and the request
      // stream it pipes holds nothing.
      if (body.kind === 'none') return proxy.web(req, res, onProxyError);
      if (body.kind === 'length') {
        headers['content-length'] = String(body.length);
        return proxy.web(req, res, onProxyError);
      }
      // The request stream was read (wholly, or up to the buffer): the engine pipes this instead.
      if (body.kind === 'whole') {
        headers['content-length'] = String(body.bytes.length);
        return proxy.web(req, res, { buffer: replayBytes(body.bytes) }, onProxyError);
      }
      // Explicit: node:http's client chunks a body by default on POST, PUT and PATCH only.
      headers['transfer-encoding'] = 'chunked';
      proxy.web(req, res, { buffer: body.stream }, onProxyError);
    },
    close() {
      agent.destroy();
    },
  };
}

/**
 * Keep-alive: http-proxy-3's default (agent: false) sends `Connection: close` upstream.
 * The agent's TLS options win over the request's (Node merges them in that order), and
 * http-proxy-3 adds none unless told (its `secure: false` would turn verification off).
 */
function createUpstreamAgent(upstream: UpstreamTarget): Agent {
  const agentOptions = {
    keepAlive: true,
    maxSockets: upstream.maxSockets,
    maxFreeSockets: Math.min(upstream.maxSockets, 256),
    scheduling: 'lifo' as const,
  };
  return upstream.origin.protocol === 'https:'
    ? new HttpsAgent({ ...agentOptions, ...upstream.tls })
    : new Agent(agentOptions);
}

/**
 * Options fixed per upstream, copied by http-proxy-3 on each call. toProxy: it then takes
 * req.url as it is instead of re-parsing it with new URL(), which would re-encode the
 * query and resolve dot segments.
 */
function createUpstreamProxy(upstream: UpstreamTarget, agent: Agent): ProxyServer {
  return createProxyServer({
    xfwd: false,
    ws: false,
    target: upstream.origin,
    agent,
    toProxy: true,
    connectTimeout: upstream.connectTimeoutMs,
    // The response head is written here, as the undici engine does: http-proxy-3's own
    // passes put back a Connection header (so Node would write no Keep-Alive timeout) and
    // copy the headers one setHeader at a time.
    selfHandleResponse: true,
  });
}

/**
 * http-proxy-3's deleteLength pass sets `content-length: 0` on a DELETE without one and drops
 * its Transfer-Encoding, while the body is still piped: the upstream would read the body as
 * a second request. Put the gateway's framing back before the request is made.
 */
function restoreChunkedFraming(req: CarryingRequest): void {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined || req[STATE]?.exchange.body.kind !== 'chunked')
    return;
  delete headers['content-length'];
  headers['transfer-encoding'] = 'chunked';
}

/** The upstream request, before its request line is written: its path and its timer. */
function upstreamRequestSetup(
  timeoutMs: number,
): (proxyReq: ClientRequest, req: CarryingRequest) => void {
  return (proxyReq, req) => {
    const state = req[STATE];
    if (state === undefined) return;
    // http-proxy-3 joins paths with its own urlJoin, which drops an empty query (`?`): put
    // back exactly the path decided while the request line is not yet written.
    if (!proxyReq.headersSent) proxyReq.path = state.exchange.path;
    // http-proxy-3 reports its own proxyTimeout as ECONNRESET, like a real reset: keep our
    // own flag so that a timeout answers 504 and a reset 502.
    (proxyReq as CarryingUpstreamRequest)[STATE] = state;
    proxyReq.setTimeout(timeoutMs, onUpstreamTimeout);
  };
}

/** The upstream's response and failures: its head written, its end, a cut, an error. */
function upstreamResponseEvents(
  timeoutMs: number,
  observer: UpstreamObserver,
): {
  onProxyRes: (proxyRes: IncomingMessage, req: CarryingRequest, res: ServerResponse) => void;
  onProxyError: (error: Error, req: CarryingRequest) => void;
} {
  function onUpstreamEnd(this: CarryingRequest): void {
    const state = this[STATE];
    if (state !== undefined) upstreamEnded(state.exchange, observer);
  }

  // A reset after the headers went out must reach the client as a cut connection (onError
  // destroys it once the head is sent), never as a response that ends cleanly and looks
  // complete; it is reported as the undici engine reports it, through onError.
  function onUpstreamClose(this: CarryingRequest): void {
    const state = this[STATE];
    if (state === undefined || this.complete) return;
    // Cut by the client (http-proxy-3 then aborts the upstream request): not the upstream's failure.
    if (state.res.destroyed) return;
    upstreamFailed(state.exchange, observer, state.timedOut ? 'timeout' : 'reset');
    const error = this.errored ?? new Error('upstream response cut');
    state.exchange.onError(failure(state, error, timeoutMs));
  }

  const onProxyError = (error: Error, req: CarryingRequest): void => {
    const state = req[STATE];
    if (state === undefined) return;
    // Bytes past a complete answer (more than its Content-Length): node:http fails the request
    // and destroys that connection, while the answer, whole as declared, still streams to the
    // client. nginx does the same: it sends the declared length and closes the connection.
    if (state.response?.complete === true) return;
    upstreamFailed(state.exchange, observer, upstreamErrorKind(error, state.timedOut));
    state.exchange.onError(failure(state, error, timeoutMs));
  };

  return { onProxyRes: proxyResponseHandler(onUpstreamEnd, onUpstreamClose), onProxyError };
}

/** The upstream's response head: written to the client, then its body piped. */
function proxyResponseHandler(
  onUpstreamEnd: (this: CarryingRequest) => void,
  onUpstreamClose: (this: CarryingRequest) => void,
): (proxyRes: IncomingMessage, req: CarryingRequest, res: ServerResponse) => void {
  return (proxyRes, req, res) => {
    // Already answered (a timeout's 504): read the rest off so the upstream socket is freed.
    if (res.writableEnded) {
      proxyRes.resume();
      return;
    }
    const state = req[STATE];
    if (state !== undefined) state.exchange.upstreamStatus = proxyRes.statusCode;
    if (!res.headersSent)
      writeProxiedHead(
        res,
        proxyRes.statusCode ?? 502,
        proxyRes.statusMessage,
        proxyRes.headers,
        state?.exchange ?? NO_EXCHANGE,
      );
    if (state !== undefined) {
      state.response = proxyRes;
      (proxyRes as CarryingRequest)[STATE] = state;
      // Before pipe's own listener: the time is taken before the client's response ends.
      // ('end' and 'close' come once each: `on` spares the wrapper `once` makes.)
      proxyRes.on('end', onUpstreamEnd);
      proxyRes.on('close', onUpstreamClose);
    }
    proxyRes.pipe(res);
  };
}

/** 504 for a timeout (ours, or the connect timeout's), else 502. */
function failure(state: ExchangeState, error: Error, timeoutMs: number): GatewayError {
  // http-proxy-3 reports our own timer as ECONNRESET "socket hang up": say what happened.
  if (state.timedOut) {
    const cause = new Error(`no data from the upstream within ${timeoutMs} ms`);
    cause.name = 'UpstreamTimeout';
    return new GatewayError('upstream_timeout', { cause });
  }
  const code = (error as NodeJS.ErrnoException).code;
  const timedOut = code === 'ECONNECT_TIMEOUT';
  return new GatewayError(timedOut ? 'upstream_timeout' : 'upstream_unavailable', {
    cause: error,
  });
}

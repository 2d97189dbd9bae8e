import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
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
import type { RequestBody } from './request-body.js';

/** undici's own timers: no data from the upstream within the timeout, or no connection. */
const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * One request through undici's dispatch API, the cheapest it has: no promise, no stream
 * object per response, the body written straight into the client's response with
 * back-pressure (pause the upstream while the client's socket is full).
 */
export class UndiciExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private clientGone = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly exchange: Exchange,
    private readonly observer: UpstreamObserver = UNOBSERVED,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(new Error('client closed'));
  }

  /** The client went away before its response was complete: stop the upstream exchange. */
  clientClosed(): void {
    this.clientGone = true;
    this.controller?.abort(new Error('client closed'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    // An interim answer (103 Early Hints): dropped, as nginx does, and as the http-proxy-3
    // engine does (node:http reports it apart from the response, and nothing forwards it), so
    // both engines answer alike; written as a final head, it left the real one nowhere to go.
    // (RFC 9110 §15.2 would have a proxy forward it; no 101 comes: no Upgrade is ever sent.)
    if (statusCode < 200) return;
    this.exchange.upstreamStatus = statusCode;
    writeProxiedHead(this.res, statusCode, statusMessage, headers, this.exchange);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.res.write(chunk)) return;
    controller.pause();
    this.res.once('drain', () => controller.resume());
  }

  onResponseEnd(): void {
    upstreamEnded(this.exchange, this.observer);
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.clientGone) return;
    const code = (error as NodeJS.ErrnoException).code ?? '';
    upstreamFailed(this.exchange, this.observer, upstreamErrorKind(error));
    // After the headers went out this reaches the client as a cut connection (writeError
    // destroys the socket), never as a response that ends cleanly and looks complete.
    this.exchange.onError(
      new GatewayError(TIMEOUT_CODES.has(code) ? 'upstream_timeout' : 'upstream_unavailable', {
        cause: error,
      }),
    );
  }
}

/** The exchange a client response belongs to: found by one shared close listener. */
const EXCHANGE = Symbol('accounts-gateway.undici-exchange');
type CarryingResponse = ServerResponse & { [EXCHANGE]?: UndiciExchange };

function onClientClose(this: CarryingResponse): void {
  if (!this.writableFinished) this[EXCHANGE]?.clientClosed();
}

/**
 * The body undici sends, from the gateway's decision: a stream goes with the Content-Length
 * given in the headers, or chunked without one; bytes go with their length.
 */
function outgoingBody(
  req: IncomingMessage,
  body: RequestBody,
  headers: OutgoingHttpHeaders,
): Buffer | Readable | null {
  switch (body.kind) {
    case 'none':
      return null;
    case 'length':
      headers['content-length'] = String(body.length);
      return req;
    case 'whole':
      return body.bytes;
    case 'chunked':
      return body.stream;
  }
}

/**
 * The undici engine: a keep-alive Pool per upstream, bounded by maxSockets, about half the
 * CPU per request of node:http's client that http-proxy-3 drives. Same contract as the
 * http-proxy-3 engine; the request line and headers are exactly what the gateway decided.
 */
export function createUndiciForwarder(
  upstream: UpstreamTarget,
  observer: UpstreamObserver = UNOBSERVED,
): Forwarder {
  const pool = new Pool(upstream.origin, {
    connections: upstream.maxSockets,
    pipelining: 1,
    connectTimeout: upstream.connectTimeoutMs,
    connect: upstream.tls,
    headersTimeout: upstream.timeoutMs,
    bodyTimeout: upstream.timeoutMs,
  });
  return {
    upstream,
    forward(req, res: CarryingResponse, exchange) {
      const handler = new UndiciExchange(res, exchange, observer);
      // No closure per request: the listener is shared and finds the handler on `res`.
      res[EXCHANGE] = handler;
      res.on('close', onClientClose);
      try {
        pool.dispatch(
          {
            method: req.method ?? 'GET',
            path: exchange.path,
            body: outgoingBody(req, exchange.body, exchange.headers),
            headers: exchange.headers as Record<string, string | string[]>,
          },
          handler,
        );
      } catch (error) {
        // undici refuses some requests before sending anything (a header value it rejects).
        upstreamFailed(exchange, observer, 'other');
        exchange.onError(new GatewayError('upstream_unavailable', { cause: error }));
      }
    },
    close() {
      // Like the http-proxy-3 engine's agent.destroy(): called once requests had their drain time.
      void pool.destroy();
    },
  };
}

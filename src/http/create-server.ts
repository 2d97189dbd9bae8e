import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { SecureContextOptions, Server as TlsServer, TlsOptions } from 'node:tls';
import { writeError, writeRawError } from '../errors/error-envelope.js';
import type { ErrorCode } from '../errors/error-codes.js';
import { GatewayError, PLAIN_HTTP_MESSAGE } from '../errors/gateway-error.js';
import { answerPlainHttpOnTls } from './plain-http-on-tls.js';
import type { RejectedRequestLog } from './rejected-request.js';
import type { RequestHandler } from './request-handler.js';
import { pickRequestId } from './request-id.js';
import { trackConnections } from './track-connections.js';

export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderCount: number;
}

export interface GatewayServer {
  readonly server: Server;
  /** The same server when it serves TLS: where a reloaded certificate is swapped in. */
  readonly secure: TlsServer | undefined;
  /** Requests received and not yet answered (their response not closed): what an exit now cuts. */
  inFlight(): number;
  /** Client connections open (over TLS, those past their handshake). */
  connections(): number;
  /**
   * Resolves once no client connection has been open, nor opened, for `quietMs` (at once
   * when that is so already), or when `latest` resolves: what a drain waits for before it
   * closes the port (see lifecycle/drain.ts).
   */
  untilIdle(quietMs: number, latest: Promise<void>): Promise<void>;
  /**
   * From now on every response not yet begun says `Connection: close` and closes its
   * connection after it, so that no client sends another request on a connection the drain
   * is about to close (RFC 9112 §9.6).
   */
  closeAfterResponses(): void;
  /**
   * Cuts every connection, a TLS one whose handshake has not finished included (Node's own
   * closeAllConnections knows only those that reached HTTP).
   */
  closeAllConnections(): void;
}

/** The response to the last request on a connection: what a later parser error belongs to. */
const LAST_RESPONSE = Symbol('accounts-gateway.last-response');
type TrackedSocket = Socket & { [LAST_RESPONSE]?: ServerResponse };

/**
 * The API server: plain HTTP, or HTTPS with `tls` (the first certificate, the minimum
 * version; later ones come through setSecureContext). `rejected` hears of each request
 * Node's parser refused, which never reaches `handler`.
 */
export function createGatewayServer(
  handler: RequestHandler,
  limits: ServerLimits,
  tls?: SecureContextOptions,
  rejected: RejectedRequestLog = () => undefined,
): GatewayServer {
  const requests = countRequests(handler);
  const server = createListener(requests.counted, limits, tls, rejected);
  answerBeyondHandler(server, requests.counted, rejected);
  const sockets = trackRequestSockets(server, tls !== undefined);
  // The TCP sockets, from accept on: under TLS, one whose handshake never ends is known
  // nowhere else, and would hold a drain (and the process) open for ever.
  const tcp = trackConnections(server);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: TrackedSocket) => {
    // https.Server reports a failed or timed-out handshake here too: no HTTP answer can
    // reach a client that has no TLS session, so the connection is closed. Nor one whose
    // session OpenSSL has ended (a refused renegotiation, a bad record): not a request.
    if (tls !== undefined && (!sockets.has(socket) || error.code?.startsWith('ERR_SSL_') === true))
      socket.destroy();
    else answerClientError(error, socket, rejected);
  });
  return {
    server,
    secure: tls === undefined ? undefined : (server as unknown as TlsServer),
    inFlight: requests.inFlight,
    connections: () => sockets.size,
    untilIdle: tcp.untilIdle,
    closeAfterResponses() {
      requests.closeAfterResponses();
      for (const socket of sockets) {
        const last = socket[LAST_RESPONSE];
        if (last !== undefined && !last.headersSent) last.shouldKeepAlive = false;
      }
    },
    closeAllConnections() {
      server.closeAllConnections();
      for (const socket of tcp.open) socket.destroy();
    },
  };
}

/**
 * `handler`, counting the requests in flight. One integer and one shared listener per
 * request, on the hot path: no closure per request.
 */
function countRequests(handler: RequestHandler): {
  readonly counted: RequestHandler;
  readonly inFlight: () => number;
  /** Every response begun from now on says `Connection: close`. */
  readonly closeAfterResponses: () => void;
} {
  let inFlight = 0;
  let closing = false;
  const settled = (): void => {
    inFlight -= 1;
  };
  const counted: RequestHandler = (req, res) => {
    inFlight += 1;
    // Both engines and the gateway's own answers read this when they write the headers.
    if (closing) res.shouldKeepAlive = false;
    (req.socket as TrackedSocket)[LAST_RESPONSE] = res;
    // 'close' comes once per response, whether it ended or its connection went away.
    res.on('close', settled);
    handler(req, res);
  };
  return {
    counted,
    inFlight: () => inFlight,
    closeAfterResponses: () => {
      closing = true;
    },
  };
}

/** The node:http (or node:https) server with the gateway's limits, serving `counted`. */
function createListener(
  counted: RequestHandler,
  limits: ServerLimits,
  tls: SecureContextOptions | undefined,
  rejected: RejectedRequestLog,
): Server {
  const options: ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts above only this often (30 s by default), letting slow
    // clients linger far past them.
    connectionsCheckingInterval: 1_000,
    maxHeaderSize: 16 * 1024,
    // Host is checked in checkFraming, so a missing one gets the gateway's error body.
    requireHostHeader: false,
  };
  // A silent client gets no longer to finish its handshake than to send a request's head
  // (Node's default is 120 s): the handshake is where a request over TLS starts. Set once,
  // at start: Node reads it per connection from a private field a reload cannot reach.
  const handshake: TlsOptions = { handshakeTimeout: limits.headersTimeoutMs };
  // https.Server runs http.Server's own connection handling (Node gives it the same methods
  // and fields: timeouts, closeAllConnections...); only the types keep the two apart.
  const server =
    tls === undefined
      ? createServer(options, counted)
      : (createHttpsServer({ ...options, ...handshake, ...tls }, counted) as unknown as Server);
  if (tls !== undefined)
    answerPlainHttpOnTls(server, {
      silentTimeoutMs: () => server.headersTimeout,
      answer: (socket) => answerPlainHttp(socket, server.headersTimeout, rejected),
    });
  // One more than allowed, so the handler sees the overflow and answers 431 instead of Node
  // silently dropping the extra lines (a late Authorization among them).
  server.maxHeadersCount = limits.maxHeaderCount + 1;
  return server;
}

/** The requests Node would answer itself, or not at all: an expectation, a CONNECT. */
function answerBeyondHandler(
  server: Server,
  counted: RequestHandler,
  rejected: RejectedRequestLog,
): void {
  // Without this Node answers `100 Continue` before any check has run; the handler sends it
  // only once the request is accepted.
  server.on('checkContinue', counted);
  // Any other expectation is ignored, as nginx does, rather than Node's bare 417 (no request
  // id, no envelope, no log line): RFC 9110 §10.1.1 lets a server answer 417; it need not.
  server.on('checkExpectation', counted);
  // A CONNECT's authority-form target names no path of ours: 400 invalid_path, as for any
  // other such target, where Node without a listener closes the connection unanswered.
  server.on('connect', (req: IncomingMessage, socket: TrackedSocket) => {
    // Node no longer listens for errors on a socket it handed over: a reset would throw.
    socket.on('error', () => socket.destroy());
    answerRefused(socket, 'invalid_path', pickRequestId(req.headers['x-request-id']), rejected);
  });
}

/**
 * One set entry per connection, not per request: the responses a drain must still reach.
 * Over TLS, 'connection' carries the TCP socket and the requests ride the TLS socket.
 */
function trackRequestSockets(server: Server, secure: boolean): Set<TrackedSocket> {
  const sockets = new Set<TrackedSocket>();
  server.on(secure ? 'secureConnection' : 'connection', (socket: TrackedSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

/**
 * Node reports a parse error, or a request that did not arrive in time, on the connection,
 * after the handler may already have answered: every request still gets exactly one
 * response, in the order the requests came (RFC 9112 §9.3.2). The error belongs to the last
 * request received while that one's message is incomplete (its body broke, or never came),
 * else to a new request whose head did not parse.
 */
function answerClientError(
  error: NodeJS.ErrnoException,
  socket: TrackedSocket,
  rejected: RejectedRequestLog,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const code = clientErrorCode(error.code);
  const last = socket[LAST_RESPONSE];
  if (last !== undefined && !last.req.complete) {
    // Its one answer is this error, unless it has one: then the connection closes after it
    // (once sent whole; a pipelined answer may still wait behind the one before it), or at
    // once when only part of it went out, so that the client sees a cut instead of a
    // response that looks complete.
    if (!last.headersSent) {
      writeError(last, new GatewayError(code), pickRequestId(last.req.headers['x-request-id']));
    } else if (!last.writableEnded) socket.destroy();
    else if (last.writableFinished) socket.destroySoon();
    else last.once('close', () => socket.destroySoon());
    return;
  }
  answerRefused(socket, code, pickRequestId(undefined), rejected);
}

/**
 * Answers a request no handler will see, and closes its connection: after the responses of
 * the requests before it on that connection, which it must not cut into.
 */
function answerRefused(
  socket: TrackedSocket,
  code: ErrorCode,
  requestId: string,
  rejected: RejectedRequestLog,
): void {
  const answer = (): void => {
    // writeRawError cuts a connection it can no longer write to: no answer, nothing counted.
    const answered = socket.writable;
    writeRawError(socket, code, requestId);
    if (answered) rejected(socket, code, requestId);
  };
  const last = socket[LAST_RESPONSE];
  if (last !== undefined && !last.writableFinished && !last.destroyed) last.once('close', answer);
  else answer();
}

/**
 * A request in plain HTTP on the TLS port: 400 with a sentence saying to use https, then the
 * connection closes. Its head is not parsed (so no X-Request-Id of the client's is kept): what
 * the client sends is read and dropped, so that the close is a FIN after the answer rather
 * than a reset that could discard it, for at most `lingerMs`.
 */
function answerPlainHttp(socket: Socket, lingerMs: number, rejected: RejectedRequestLog): void {
  const requestId = pickRequestId(undefined);
  socket.resume();
  const answered = socket.writable;
  writeRawError(socket, 'bad_request', requestId, PLAIN_HTTP_MESSAGE);
  if (answered) rejected(socket, 'bad_request', requestId);
  const linger = setTimeout(() => socket.destroy(), lingerMs);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

function clientErrorCode(code: string | undefined): ErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  // A target the parser cannot take as a URL (`GET other.example:80`, authority-form on a
  // method other than CONNECT; `GET accounts`, no leading `/`): a path problem, as the same
  // targets are when they parse (route-table refuses every non-origin, non-absolute form).
  if (code === 'HPE_INVALID_URL') return 'invalid_path';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT')
    return 'request_timeout';
  return 'bad_request';
}

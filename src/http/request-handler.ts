import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Authenticator } from '../auth/authenticate.js';
import { isDenial, isDenialReason, type AuthOutcome, type DenialReason } from '../auth/denial.js';
import type { Identity } from '../identity/identity.js';
import { hasScopes } from '../identity/scopes.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { UpstreamErrorKind } from '../errors/upstream-error-kind.js';
import { writeError } from '../errors/error-envelope.js';
import { describeFailure } from '../errors/describe-failure.js';
import { FORWARD_AUTH_MESSAGES, GatewayError, toGatewayError } from '../errors/gateway-error.js';
import {
  createAccessLog,
  type AccessEntry,
  type AccessLog,
  type AccessLogOptions,
} from '../observability/access-log.js';
import type { Logger } from '../observability/create-logger.js';
import type { RateLimiter, RateVerdict } from '../protection/rate-limiter.js';
import type { Exchange } from '../proxy/forwarder.js';
import { frameRequestBody, NO_BODY, type RequestBody } from '../proxy/request-body.js';
import { buildUpstreamHeaders, type HeaderPolicy } from '../proxy/upstream-headers.js';
import type { RouteTable } from '../routing/route-table.js';
import {
  beginSpans,
  beginTrace,
  type RequestTrace,
  type TraceSettings,
} from '../tracing/request-trace.js';
import type { RequestSpans } from '../tracing/span-sink.js';
import { formatTraceparent } from '../tracing/trace-context.js';
import { newSpanId } from '../tracing/trace-ids.js';
import { checkFraming } from './check-framing.js';
import { expectsContinue } from './expects-continue.js';
import { takeExchangeBytes, type ExchangeBytes } from './connection-bytes.js';
import type { ClientAddress } from '../identity/client-address.js';
import { normalizeAddress, resolveClientAddress, type ClientAddressing } from './client-address.js';
import { pickRequestId } from './request-id.js';
import { readOriginalRequest, writeAllowed } from './forward-auth.js';
import type { EndpointRoute, ForwardAuthRoute, ProxyRoute, RouteEntry } from './routes.js';

/** A route that decides a request: everything but the forward-auth check, which names one. */
type DecidingRoute = ProxyRoute | EndpointRoute;

const NO_FIELDS: readonly string[] = [];

export interface RequestHandlerOptions {
  routes: RouteTable<RouteEntry>;
  authenticator: Authenticator;
  headerPolicy: HeaderPolicy;
  /** Which peers' X-Forwarded-* headers are believed, and how addresses are counted. */
  addressing: ClientAddressing;
  maxHeaderCount: number;
  logger: Logger;
  logRequests: boolean;
  /** `logging.query`: the access line's path keeps the query. */
  logQuery: boolean;
  metrics: GatewayMetrics;
  /** Undefined when no rate limit is configured: then nothing is checked, no promise made. */
  rateLimiter?: RateLimiter | undefined;
  tracing: TraceSettings;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** What every request of one request chain (one configuration) shares. */
interface Shared {
  readonly options: RequestHandlerOptions;
  readonly accessLog: AccessLog | undefined;
  /** The `request failed` warnings: written whether or not access lines are on. */
  readonly failureLog: AccessLog | undefined;
}

const CONTEXT = Symbol('accounts-gateway.request');
type CarryingResponse = ServerResponse & { [CONTEXT]?: RequestContext };

/**
 * One request from arrival to close. Its steps are methods and it is the forwarder's
 * Exchange itself, so the hot path allocates this one object and no closure: the close
 * listener is shared and finds the context on the response.
 */
class RequestContext implements Exchange, ExchangeBytes {
  readonly requestId: string;
  readonly startedAt = performance.now();
  /**
   * The client's connection, taken on arrival: undici sets req.socket to null once it has
   * consumed a request body (its util.destroy), and finish() still needs the socket after.
   */
  private readonly socket: Socket;
  // Set by finish() (see connection-bytes).
  bytesIn = 0;
  bytesOut = 0;
  /** The method the route's rules see: a forward-auth check's is the request it names. */
  method: string;
  route = 'none';
  /** Set when the request is a forward-auth check: answered, never forwarded. */
  private checking: ForwardAuthRoute | undefined = undefined;
  /** The own endpoint deciding the request, once known: it may write its errors itself. */
  private endpoint: EndpointRoute | undefined = undefined;
  identity: Identity | undefined = undefined;
  /** The failure the error envelope answered. */
  error: GatewayError | undefined = undefined;
  /** A failure after the head went out: the response was cut, no envelope sent. */
  private cut: GatewayError | undefined = undefined;
  // The Exchange, once the request is accepted for forwarding.
  path = '';
  headers: OutgoingHttpHeaders = {};
  body: RequestBody = NO_BODY;
  upstreamStartedAt = 0;
  upstreamStatus: number | undefined = undefined;
  upstreamMs: number | undefined = undefined;
  upstreamError: UpstreamErrorKind | undefined = undefined;
  /** The rate-limit fields once a limit was checked: `[name, value, …]` (see Exchange). */
  responseFields: readonly string[] = NO_FIELDS;
  /** A shadow rate limit that would have refused this request, for the access line. */
  private rateLimitShadow: string | undefined = undefined;
  /** Why the credentials were refused, for the access line. */
  private authFailure: DenialReason | undefined = undefined;
  private client: ClientAddress | undefined = undefined;
  private trusted: boolean | undefined = undefined;
  /** W3C trace context: continued from the client's traceparent, or started here. */
  readonly trace: RequestTrace;
  /** Only on a sampled request while spans are exported. */
  private readonly spans: RequestSpans | undefined;

  constructor(
    readonly shared: Shared,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.requestId = pickRequestId(req.headers['x-request-id']);
    this.socket = req.socket;
    this.method = req.method ?? '';
    const { tracing } = shared.options;
    this.trace = beginTrace(tracing, req.headers.traceparent, req.headers.tracestate);
    this.spans = beginSpans(tracing, this.trace, this.method);
  }

  run(): void {
    const { req } = this;
    const { options } = this.shared;
    const framing = checkFraming(req, options.maxHeaderCount);
    if (framing !== undefined) return this.onError(new GatewayError(framing));
    // Absolute-form is routed by its path and query; `*` matches nothing (see route-table).
    const match = options.routes.match(req.url ?? '');
    if (match.kind !== 'match') return this.onError(new GatewayError(match.kind));
    if (match.entry.kind === 'forward-auth') this.check(match.entry, match.param, match.query);
    else this.decide(match.entry, match.param, match.query);
  }

  /**
   * A forward-auth check: the request it names goes through the same route table and the
   * same rules (method, credentials, scopes, rate limits, lockout) as if it had come itself,
   * and is answered instead of forwarded.
   */
  private check(route: ForwardAuthRoute, rest: string | undefined, query: string): void {
    const { req } = this;
    const { options } = this.shared;
    this.route = route.name;
    this.checking = route;
    const original = readOriginalRequest({
      peerTrusted: this.peerTrusted(),
      method: this.method,
      rest,
      query,
      headers: req.headersDistinct,
    });
    if (original.kind === 'untrusted')
      return this.onError(
        new GatewayError('forbidden', { message: FORWARD_AUTH_MESSAGES.untrusted }),
      );
    if (original.kind === 'unnamed')
      return this.onError(
        new GatewayError('bad_request', { message: FORWARD_AUTH_MESSAGES.unnamed }),
      );
    const match = options.routes.match(original.target);
    if (match.kind !== 'match') return this.onError(new GatewayError(match.kind));
    // Only configured routes are decided for another proxy: the gateway's own endpoints (and
    // the check itself) are reached through the gateway, not behind another proxy.
    if (match.entry.kind !== 'proxy') return this.onError(new GatewayError('not_found'));
    this.method = original.method;
    this.decide(match.entry, match.param, match.query);
  }

  /** The connected peer's address, normalized (a proxy's, when one is in front). */
  private peer(): string {
    return normalizeAddress(this.socket.remoteAddress ?? '');
  }

  private encrypted(): boolean {
    return (this.socket as Partial<TLSSocket>).encrypted === true;
  }

  /**
   * The connection, when it is the client's own: one from a trusted proxy carries many
   * clients' credentials, which must not be compared with each other (however briefly).
   */
  private ownConnection(): object | undefined {
    return this.peerTrusted() ? undefined : this.socket;
  }

  /**
   * The peer is in `server.trustedProxies`: its X-Forwarded-* and forward-auth headers count.
   * Asked by the credential check and again by the forwarding: worked out once.
   */
  private peerTrusted(): boolean {
    this.trusted ??= this.shared.options.addressing.trusted.has(this.peer());
    return this.trusted;
  }

  /** The route's rules, in order: method, then credentials (or, without, the address limit). */
  private decide(route: DecidingRoute, param: string | undefined, query: string): void {
    const { req } = this;
    const { options } = this.shared;
    this.route = this.checking === undefined ? route.name : `${this.checking.name}:${route.name}`;
    if (route.kind === 'endpoint') this.endpoint = route;
    if (!route.methods.has(this.method)) {
      return this.onError(new GatewayError('method_not_allowed', { allow: route.allow }));
    }
    if (route.schemes === null) {
      if (this.limit(route, param, query)) return;
      if (route.kind === 'endpoint') this.serve(route, param, query);
      return;
    }
    this.spans?.beginAuth();
    const outcome = options.authenticator.authenticate(
      req.headers.authorization,
      route.schemes,
      this,
      this.ownConnection(),
    );
    if (outcome instanceof Promise) {
      outcome.then(
        (settled) => this.proceed(route, settled, param, query),
        (error: unknown) => this.onError(error),
      );
    } else this.proceed(route, outcome, param, query);
  }

  /**
   * The client address, and the network the lockout and the address rate limit count: asked
   * only by a check that runs bcrypt, by an address policy or by the token endpoint, never on
   * a cache hit; worked out once per request.
   */
  clientAddress(): ClientAddress {
    this.client ??= resolveClientAddress(
      this.socket.remoteAddress ?? '',
      this.req.headers['x-forwarded-for'],
      this.shared.options.addressing,
    );
    return this.client;
  }

  private proceed(
    route: DecidingRoute,
    outcome: AuthOutcome,
    param: string | undefined,
    query: string,
  ): void {
    const denied = isDenial(outcome);
    this.spans?.endAuth(
      denied ? undefined : outcome.method,
      denied ? undefined : outcome.subject,
      denied ? undefined : outcome.key,
      denied ? outcome.denied : undefined,
    );
    if (denied)
      return this.onError(this.shared.options.authenticator.refuse(outcome, route.schemes ?? []));
    this.identity = outcome;
    this.shared.options.metrics.countAuthSuccess(outcome.method);
    // Authenticated, and now authorized: the route's scopes, all of them (RFC 6750 §3.1's
    // insufficient_scope is a 403 too; the envelope says `forbidden`).
    if (!hasScopes(outcome.scopes, route.scopes))
      return this.onError(this.shared.options.authenticator.refuseScope(outcome, route.scopes));
    if (this.limit(route, param, query)) return;
    this.dispatch(route, param, query);
  }

  /** The request is accepted: to the upstream, or to the gateway's own endpoint. */
  private dispatch(route: DecidingRoute, param: string | undefined, query: string): void {
    // Answered meanwhile: its body broke or came too late (see create-server's clientError).
    if (this.res.headersSent) return;
    const { identity, checking } = this;
    if (route.kind === 'endpoint') this.serve(route, param, query);
    else if (identity === undefined) return;
    else if (checking !== undefined) {
      this.setResponseFields();
      writeAllowed(this.res, identity, this.requestId, checking.cacheMaxAgeSec);
    } else this.forward(route, identity, param, query);
  }

  /**
   * The gateway's own fields (responseFields) set on a response it writes itself: an
   * upstream's head carries them in its one writeHead instead.
   */
  private setResponseFields(): void {
    const fields = this.responseFields;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [name, value] = [fields[i], fields[i + 1]];
      if (name !== undefined && value !== undefined) this.res.setHeader(name, value);
    }
  }

  /**
   * Rate limits: per credential (and route) once authenticated, per client address on the
   * routes that take no credentials. False when the request may go on now; true when it was
   * refused, or goes on (dispatch) once the store has answered.
   */
  private limit(route: DecidingRoute, param: string | undefined, query: string): boolean {
    const limiter = this.shared.options.rateLimiter;
    if (limiter === undefined) return false;
    const { identity } = this;
    const check =
      identity === undefined
        ? limiter.checkAddress(this.clientAddress().network)
        : limiter.checkCredential(
            route.name,
            route.kind === 'proxy' ? route.rateLimit : undefined,
            identity,
          );
    if (check === undefined) return false;
    if (check instanceof Promise) {
      check.then(
        (verdict) => {
          if (!this.applyLimit(verdict)) this.dispatch(route, param, query);
        },
        (error: unknown) => this.onError(error),
      );
      return true;
    }
    return this.applyLimit(check);
  }

  /** Keeps the IETF fields for the response; true (and the 429 written) when refused. */
  private applyLimit(verdict: RateVerdict | undefined): boolean {
    if (verdict === undefined) return false;
    if (verdict.shadowRefusedBy !== undefined) {
      this.rateLimitShadow = verdict.shadowRefusedBy;
      this.shared.options.metrics.countRateLimitShadowed(verdict.shadowRefusedBy);
    }
    if (verdict.policyHeader !== '')
      this.responseFields = [
        'ratelimit-policy',
        verdict.policyHeader,
        'ratelimit',
        verdict.limitHeader,
      ];
    if (verdict.allowed) return false;
    this.shared.options.metrics.countRateLimited(verdict.refusedBy ?? 'credential');
    this.onError(new GatewayError('rate_limited', { retryAfterSec: verdict.retryAfterSec }));
    return true;
  }

  /** `rest` is what a prefix route matched after its prefix; undefined on an exact path. */
  private forward(
    route: ProxyRoute,
    identity: Identity,
    rest: string | undefined,
    query: string,
  ): void {
    const { req, res } = this;
    if (res.destroyed) return;
    const { headerPolicy } = this.shared.options;
    this.path = (rest === undefined ? route.pathPrefix : route.restBase + rest) + query;
    const { upstream } = route.forwarder;
    // The upstream's parent is the gateway's span for this call (the CLIENT span when spans
    // are exported), never the client's: W3C Trace Context §3.2 has each hop send its own.
    const spanId =
      this.spans?.beginUpstream({
        method: this.method,
        upstream: upstream.name,
        origin: upstream.origin,
        path: this.path,
      }) ?? newSpanId();
    this.headers = buildUpstreamHeaders(headerPolicy, {
      headers: req.headers,
      identity,
      requestId: this.requestId,
      peer: this.peer(),
      peerTrusted: this.peerTrusted(),
      upstreamHost: route.forwarder.upstream.host,
      encrypted: this.encrypted(),
      traceparent: formatTraceparent(this.trace.traceId, spanId, this.trace.flags),
      tracestate: this.trace.state,
    });
    // Only now, with the request accepted, may the client send its body (see checkContinue).
    if (expectsContinue(req.headers)) res.writeContinue();
    const body = frameRequestBody(req, upstream.bodyBufferBytes);
    if (!(body instanceof Promise)) return this.send(route, body);
    body.then(
      (read) => {
        // The client went away, or the server answered 408 meanwhile: nothing to forward.
        if (read !== undefined && !res.headersSent && !res.destroyed) this.send(route, read);
      },
      (error: unknown) => this.onError(error),
    );
  }

  private send(route: ProxyRoute, body: RequestBody): void {
    this.body = body;
    this.upstreamStartedAt = performance.now();
    route.forwarder.forward(this.req, this.res, this);
  }

  private serve(route: EndpointRoute, param: string | undefined, query: string): void {
    const { req, res, requestId, identity } = this;
    this.setResponseFields();
    route
      .handle({ req, res, requestId, identity, param, query, client: this })
      .catch((error: unknown) => this.onError(error));
  }

  /** Every failure ends here: the envelope, or a cut connection once the response started. */
  onError(error: unknown): void {
    const failure = toGatewayError(error);
    // A refusal's code is its denial's reason, on a proxied route as on the gateway's own
    // endpoints (a wrong password on POST /auth/token, a key refused on /keys).
    if (isDenialReason(failure.code)) this.authFailure = failure.code;
    // Once the head went out no envelope can follow (writeError cuts the connection): the
    // line then has the cause but no error_code, whichever engine reported the cut.
    if (this.res.headersSent) this.cut = failure;
    else this.error = failure;
    // nginx's auth_request hands its config the check's status and headers, never the body:
    // the code lets it answer invalid_path or token_expired rather than guess from the status.
    if (!this.res.headersSent) {
      this.setResponseFields();
      if (this.checking !== undefined) this.res.setHeader('x-auth-error', failure.code);
    }
    const { endpoint } = this;
    if (endpoint?.writeError === undefined) writeError(this.res, failure, this.requestId);
    else endpoint.writeError(this.res, failure, this.requestId);
  }

  finish(): void {
    const { req, res, error } = this;
    const { options, accessLog, failureLog } = this.shared;
    const durationMs = performance.now() - this.startedAt;
    const source = this.upstreamStatus === undefined ? 'gateway' : 'upstream';
    options.metrics.observeRequest(this.route, res.statusCode, durationMs / 1000, source);
    takeExchangeBytes(this.socket, this);
    this.spans?.end({
      route: this.route,
      status: res.statusCode,
      target: req.url ?? '',
      scheme: this.encrypted() ? 'https' : 'http',
      errorCode: error?.code,
      aborted: !res.writableFinished,
    });
    const failure = error ?? this.cut;
    const failed = failure !== undefined && failure.status >= 500;
    if (accessLog === undefined && !failed) return;
    const entry: AccessEntry = {
      requestId: this.requestId,
      method: this.method,
      target: req.url ?? '',
      route: this.route,
      status: res.statusCode,
      durationMs,
      clientAddress: this.clientAddress().address,
      userAgent: req.headers['user-agent'],
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      upstreamStatus: this.upstreamStatus,
      upstreamMs: this.upstreamMs,
      upstreamError: this.upstreamError,
      authMethod: this.identity?.method,
      subject: this.identity?.subject,
      key: this.identity?.key,
      authFailure: this.authFailure,
      errorCode: error?.code,
      rateLimitShadow: this.rateLimitShadow,
      traceId: this.trace.traceId,
      aborted: !res.writableFinished,
    };
    // Failures of ours (5xx, or a response cut after its head) are warnings with their cause,
    // whether or not access lines are on.
    if (failed) failureLog?.(entry, describeFailure(failure));
    else accessLog?.(entry);
  }
}

function onResponseClose(this: CarryingResponse): void {
  this[CONTEXT]?.finish();
}

/** Parse, then decide, then act: every refusal happens before anything is forwarded. */
export function createRequestHandler(options: RequestHandlerOptions): RequestHandler {
  const logOptions: AccessLogOptions = { query: options.logQuery };
  const shared: Shared = {
    options,
    accessLog: options.logRequests ? createAccessLog(options.logger, logOptions) : undefined,
    failureLog: createAccessLog(options.logger, logOptions, true),
  };
  return (req, res: CarryingResponse) => {
    const context = new RequestContext(shared, req, res);
    res[CONTEXT] = context;
    res.on('close', onResponseClose);
    context.run();
  };
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Authenticator } from '../auth/authenticate.js';
import { isDenial, type AuthOutcome } from '../auth/denial.js';
import type { Identity } from '../identity/identity.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { writeError } from '../errors/error-envelope.js';
import { GatewayError, toGatewayError } from '../errors/gateway-error.js';
import { createAccessLog, toLogFields, type AccessEntry } from '../observability/access-log.js';
import type { Logger } from '../observability/create-logger.js';
import { buildUpstreamHeaders, type HeaderPolicy } from '../proxy/upstream-headers.js';
import type { RouteTable } from '../routing/route-table.js';
import { checkFraming } from './check-framing.js';
import { normalizeAddress } from './client-address.js';
import { pickRequestId } from './request-id.js';
import type { EndpointRoute, ProxyRoute, RouteEntry } from './routes.js';

export interface RequestHandlerOptions {
  routes: RouteTable<RouteEntry>;
  authenticator: Authenticator;
  headerPolicy: HeaderPolicy;
  /** Peers whose X-Forwarded-* headers are believed (see client-address). */
  trustedProxies: ReadonlySet<string>;
  maxHeaderCount: number;
  logger: Logger;
  logRequests: boolean;
  metrics: GatewayMetrics;
}

interface RequestState {
  readonly requestId: string;
  readonly startedAt: number;
  readonly method: string;
  route: string;
  identity: Identity | undefined;
  error: GatewayError | undefined;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Parse, then decide, then act: every refusal happens before anything is forwarded. */
export function createRequestHandler(options: RequestHandlerOptions): RequestHandler {
  const { routes, authenticator, headerPolicy, trustedProxies, logger, metrics } = options;
  const accessLog = options.logRequests ? createAccessLog(logger) : undefined;

  const finish = (state: RequestState, res: ServerResponse): void => {
    const durationMs = performance.now() - state.startedAt;
    metrics.observeRequest(state.route, res.statusCode, durationMs / 1000);
    const error = state.error;
    if (accessLog === undefined && (error === undefined || error.status < 500)) return;
    const entry: AccessEntry = {
      requestId: state.requestId,
      method: state.method,
      route: state.route,
      status: res.statusCode,
      durationMs,
      authMethod: state.identity?.method,
      subject: state.identity?.subject,
      key: state.identity?.key,
      errorCode: error?.code,
      aborted: !res.writableFinished,
    };
    // Failures of ours (5xx) are warnings with their cause, whether or not access lines are on.
    if (error !== undefined && error.status >= 500) {
      logger.warn({ ...toLogFields(entry), cause: describeCause(error.cause) }, 'request failed');
    } else {
      accessLog?.(entry);
    }
  };

  const fail = (state: RequestState, res: ServerResponse, error: unknown): void => {
    const failure = toGatewayError(error);
    state.error = failure;
    writeError(res, failure, state.requestId);
  };

  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    state: RequestState,
    route: ProxyRoute,
    identity: Identity,
    query: string,
  ): void => {
    if (res.destroyed) return;
    const peer = normalizeAddress(req.socket.remoteAddress ?? '');
    const headers = buildUpstreamHeaders(headerPolicy, {
      headers: req.headers,
      identity,
      requestId: state.requestId,
      peer,
      peerTrusted: trustedProxies.has(peer),
      upstreamHost: route.forwarder.upstream.host,
      encrypted: (req.socket as Partial<TLSSocket>).encrypted === true,
    });
    // Only now, with the request accepted, may the client send its body (see checkContinue).
    if (req.headers.expect !== undefined) res.writeContinue();
    route.forwarder.forward(req, res, {
      path: route.pathPrefix + query,
      headers,
      requestId: state.requestId,
      onError: (error) => fail(state, res, error),
    });
  };

  const serveEndpoint = (
    req: IncomingMessage,
    res: ServerResponse,
    state: RequestState,
    route: EndpointRoute,
    identity: Identity | undefined,
    param: string | undefined,
    query: string,
  ): void => {
    route
      .handle({ req, res, requestId: state.requestId, identity, param, query })
      .catch((error: unknown) => fail(state, res, error));
  };

  return (req, res) => {
    const state: RequestState = {
      requestId: pickRequestId(req.headers['x-request-id']),
      startedAt: performance.now(),
      method: req.method ?? '',
      route: 'none',
      identity: undefined,
      error: undefined,
    };
    res.once('close', () => finish(state, res));
    const framing = checkFraming(req, options.maxHeaderCount);
    if (framing !== undefined) return fail(state, res, new GatewayError(framing));
    // Absolute-form (`GET http://host/...`) and `*` never match: they are not origin-form.
    const match = routes.match(req.url ?? '');
    if (match.kind !== 'match') return fail(state, res, new GatewayError(match.kind));
    const route = match.entry;
    state.route = route.name;
    if (!route.methods.has(state.method)) {
      return fail(state, res, new GatewayError('method_not_allowed', { allow: route.allow }));
    }
    if (route.schemes === null) {
      if (route.kind === 'endpoint')
        serveEndpoint(req, res, state, route, undefined, match.param, match.query);
      return;
    }
    const { schemes } = route;
    const proceed = (outcome: AuthOutcome): void => {
      if (isDenial(outcome)) return fail(state, res, authenticator.refuse(outcome, schemes));
      state.identity = outcome;
      if (route.kind === 'proxy') forward(req, res, state, route, outcome, match.query);
      else serveEndpoint(req, res, state, route, outcome, match.param, match.query);
    };
    const outcome = authenticator.authenticate(req.headers.authorization, schemes);
    if (outcome instanceof Promise)
      outcome.then(proceed, (error: unknown) => fail(state, res, error));
    else proceed(outcome);
  };
}

function describeCause(cause: unknown): string | undefined {
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code === undefined
      ? `${cause.name}: ${cause.message}`
      : `${cause.name} ${code}: ${cause.message}`;
  }
  return undefined;
}

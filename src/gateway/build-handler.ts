import type { Authenticator } from '../auth/authenticate.js';
import type { GatewayConfig } from '../config/config-schema.js';
import type { ClientAddressing } from '../http/client-address.js';
import { createTrustedProxies } from '../http/ip-network.js';
import { createRequestHandler, type RequestHandler } from '../http/request-handler.js';
import type { RouteEntry } from '../http/routes.js';
import type { Logger } from '../observability/create-logger.js';
import type { RateLimiter } from '../protection/rate-limiter.js';
import { createHeaderPolicy } from '../proxy/upstream-headers.js';
import type { RouteTable } from '../routing/route-table.js';
import type { ChainDeps } from './chain-deps.js';

/** Which peers' X-Forwarded-* headers are believed, and how client addresses are counted. */
export function buildAddressing(config: GatewayConfig, logger: Logger): ClientAddressing {
  const addressing: ClientAddressing = {
    trusted: createTrustedProxies(config.server.trustedProxies),
    ...config.server.clientNetworks,
  };
  // Allowed (a gateway reachable only through its load balancer may trust them all), but
  // then every client names the address its lockout and address limits count: say so.
  const everyone = config.server.trustedProxies.filter((entry) => entry.endsWith('/0'));
  if (everyone.length > 0)
    logger.warn(
      { trustedProxies: everyone },
      'server.trustedProxies trusts every address: any client that reaches this port directly chooses the address its lockout and address rate limit count',
    );
  return addressing;
}

export interface HandlerParts {
  readonly routes: RouteTable<RouteEntry>;
  readonly authenticator: Authenticator;
  readonly addressing: ClientAddressing;
  readonly rateLimiter: RateLimiter | undefined;
}

/** Every API request, from its head to its close, on the routes of one configuration. */
export function buildHandler(
  config: GatewayConfig,
  deps: ChainDeps,
  parts: HandlerParts,
): RequestHandler {
  const headerPolicy = createHeaderPolicy({
    allowHeaders: config.forwarding.allowHeaders,
    forwardAuthorization: config.forwarding.forwardAuthorization,
  });
  return createRequestHandler({
    ...parts,
    headerPolicy,
    maxHeaderCount: config.server.maxHeaderCount,
    logger: deps.logger,
    logRequests: config.logging.requests,
    logQuery: config.logging.query,
    metrics: deps.metrics,
    tracing: {
      propagate: config.tracing.propagate,
      sampleRatio: config.tracing.sampleRatio,
      spans: deps.spans,
    },
  });
}

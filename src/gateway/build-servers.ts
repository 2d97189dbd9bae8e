import type { Server } from 'node:http';
import { createAdminServer } from '../admin/admin-server.js';
import type { Backend } from '../backends/backend.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { createGatewayServer, type GatewayServer } from '../http/create-server.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { loadListenerTls, type ListenerTls } from '../tls/listener-tls.js';
import type { Readiness } from './follow-readiness.js';
import type { RequestChain } from './request-chain.js';

/** The ports of one process, made but not yet listening. */
export interface Servers {
  readonly api: GatewayServer;
  /** Undefined without `server.tls` (HTTPS on or off needs a restart). */
  readonly listenerTls: ListenerTls | undefined;
  /** Undefined when off, and in a worker (its primary serves one for the set). */
  readonly admin: Server | undefined;
}

export interface ServerParts {
  readonly backend: Backend;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly readiness: Readiness;
  /** The chain serving now: each request goes to whichever the last reload built. */
  readonly chain: () => RequestChain;
  readonly worker: boolean;
}

export async function buildServers(config: GatewayConfig, parts: ServerParts): Promise<Servers> {
  const { metrics, chain, backend } = parts;
  const listenerTls =
    config.server.tls === undefined
      ? undefined
      : await loadListenerTls(config.server.tls, {
          log: parts.logger,
          now: parts.now,
          onServed: (notAfterSec) => metrics.setTlsCertificateNotAfter(notAfterSec),
          onReload: (outcome) => metrics.countTlsReload(outcome),
        });
  const api = createGatewayServer(
    (req, res) => chain().handler(req, res),
    config.server,
    listenerTls?.serverOptions,
    (socket, code, requestId) => chain().rejected(socket, code, requestId),
  );
  metrics.readFrom({
    openConnections: () => api.connections(),
    cacheEntries: (method) =>
      method === 'basic' ? chain().basic.cacheEntries() : chain().bearer.cacheEntries(),
    ...(backend.redisConnections && { redisConnections: backend.redisConnections }),
    jwksFetchedAt: () => chain().jwksFetchedAt(),
    bcryptWork: () => chain().bcryptWork(),
  });
  if (api.secure !== undefined) listenerTls?.attach(api.secure);
  const admin =
    config.admin.enabled && !parts.worker
      ? createAdminServer({
          metrics,
          ready: () =>
            backend.credentials.ping().then(
              () => true,
              () => false,
            ),
          draining: () => parts.readiness.draining(),
        })
      : undefined;
  return { api, listenerTls, admin };
}

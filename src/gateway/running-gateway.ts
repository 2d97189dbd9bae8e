import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/config-schema.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import type { ExpiringCounter } from '../credentials/expiring-counter.js';
import { closeServer, listenOn } from '../http/listen.js';
import { drainApiPort } from '../lifecycle/drain.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { SigningKeys } from '../tokens/signing-key.js';
import { createTokenSigner, type TokenSigner } from '../tokens/token-signer.js';
import type { SpanExport } from '../tracing/span-sink.js';
import type { BootstrapPair } from './bootstrap-pair.js';
import type { Servers } from './build-servers.js';
import type { ChainDeps } from './chain-deps.js';
import type { Readiness } from './follow-readiness.js';
import { buildRequestChain, type RequestChain } from './request-chain.js';
import { reloadedConfig } from './restart-only.js';

export interface Gateway {
  /**
   * Binds the ports; resolves with the bound addresses. When a port cannot be opened, frees
   * everything opened so far (ports, the built-in upstream, the store connection) and rejects
   * with a ListenError naming the address.
   */
  listen(): Promise<{ port: number; adminPort: number | undefined }>;
  /**
   * Applies a new configuration without dropping connections: routes, upstreams, auth,
   * forwarding, tokens, limits and logging take effect for the next request. Listen
   * addresses, the admin port and the credential store need a restart (logged as such).
   */
  reload(next: GatewayConfig): Promise<void>;
  /**
   * Stops accepting once clients stop coming (server.shutdownDelayMs, then shutdownQuietMs),
   * waits for in-flight requests (up to the drain timeout), frees everything. From its call
   * on, /readyz answers 503 `draining` (the admin port closes last).
   */
  close(): Promise<void>;
  /** API requests received and not yet answered. */
  inFlight(): number;
  /** A key pair made at start for the zero-setup demo (memory store only), shown once. */
  readonly bootstrap: BootstrapPair | undefined;
  readonly store: CredentialStore;
  readonly metrics: GatewayMetrics;
}

/** What serves now: replaced, all three at once, by each reload. */
export interface Current {
  config: GatewayConfig;
  signer: TokenSigner;
  chain: RequestChain;
}

/** What a running gateway is made of (gateway.ts assembles it). */
export interface GatewayParts {
  readonly chainDeps: ChainDeps;
  /** The CLI hands a key in (lifecycle/supervisor.ts chose it); else one generated at start. */
  readonly signingKeys: SigningKeys;
  readonly servers: Servers;
  readonly readiness: Readiness;
  readonly spanExport: SpanExport | undefined;
  readonly bootstrap: BootstrapPair | undefined;
  /** gateway_pairs_expiring's background count; undefined when not counted. */
  readonly expiringCounter: ExpiringCounter | undefined;
  /** The `gateway listening` line's: a worker's says `worker listening`. */
  readonly listeningMessage: string;
  /** The store as the start line names it: the configured one, or `injected`. */
  readonly storeName: string;
}

interface Run extends GatewayParts {
  readonly current: Current;
  /** The ports being opened, settled either way: a close waits for it. */
  opening: Promise<void>;
  /** Frees everything, once: after a drain, or at once when a port failed to open. */
  released: Promise<void> | undefined;
}

/** Listen, reload and close over what gateway.ts assembled. */
export function runningGateway(parts: GatewayParts, current: Current): Gateway {
  const run: Run = { ...parts, current, opening: Promise.resolve(), released: undefined };
  const { metrics } = parts.chainDeps;
  return {
    bootstrap: parts.bootstrap,
    store: parts.chainDeps.backend.credentials,
    metrics,
    inFlight: () => parts.servers.api.inFlight(),
    listen: () => listen(run),
    reload: (next) => reload(run, next),
    close: () => close(run),
  };
}

async function listen(run: Run): Promise<{ port: number; adminPort: number | undefined }> {
  const opened = openPorts(run);
  run.opening = opened.then(
    () => undefined,
    () => undefined,
  );
  const { logger } = run.chainDeps;
  let bound: { port: number; adminPort: number | undefined };
  try {
    bound = await opened;
  } catch (error) {
    // Nothing may keep serving (nor keep the process alive) once the start has failed.
    // No drain to bound the flush: one export timeout at most.
    await release(run, Infinity).catch((cleanup: unknown) =>
      logger.error({ err: cleanup }, 'freeing what was opened failed'),
    );
    throw error;
  }
  const { port, adminPort } = bound;
  logger.info(
    { host: run.current.config.server.host, port, admin_port: adminPort, store: run.storeName },
    run.listeningMessage,
  );
  // Written at once (logs are batched otherwise): supervisors and tests wait for it.
  logger.flush();
  return { port, adminPort };
}

async function openPorts(run: Run): Promise<{ port: number; adminPort: number | undefined }> {
  const { api, admin } = run.servers;
  const { server } = run.current.config;
  const port = await listenOn(api.server, server.host, server.port, 'API port');
  const { admin: settings } = run.current.config;
  const adminPort =
    admin === undefined || run.readiness.draining()
      ? undefined
      : await listenOn(admin, settings.host, settings.port, 'admin port');
  return { port, adminPort };
}

async function reload(run: Run, next: GatewayConfig): Promise<void> {
  const { listenerTls, api } = run.servers;
  const { logger, now } = run.chainDeps;
  const running = run.current.config;
  const { effective, kept } = reloadedConfig(running, next, listenerTls !== undefined);
  if (kept.length > 0)
    logger.warn({ settings: kept }, 'these settings need a restart; the running values stay');
  const signer =
    JSON.stringify(effective.tokens) === JSON.stringify(running.tokens)
      ? run.current.signer
      : await createTokenSigner(run.signingKeys.resolve(effective.tokens), now);
  const previous = run.current.chain;
  const chain = await buildRequestChain(effective, run.chainDeps, signer, previous);
  Object.assign(run.current, { config: effective, signer, chain });
  applyServerLimits(api.server, effective.server);
  // Requests already forwarded keep the old upstream connections until they finish.
  setTimeout(() => void previous.close(), effective.server.drainTimeoutMs).unref();
  // A certificate that does not pass is logged and the served one stays: not a failed reload.
  const { tls } = effective.server;
  if (tls !== undefined) await listenerTls?.reload('reload', tls);
  const cache = (kept: boolean) => (kept ? 'kept' : 'emptied');
  logger.info(
    {
      basic_cache: cache(chain.basic.verified === previous.basic.verified),
      bearer_cache: cache(chain.bearer.verified === previous.bearer.verified),
    },
    'configuration reloaded',
  );
}

/** The timeouts and limits a server applies to the connections it accepts from now on. */
function applyServerLimits(server: Server, settings: GatewayConfig['server']): void {
  server.headersTimeout = settings.headersTimeoutMs;
  server.requestTimeout = settings.requestTimeoutMs;
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  server.maxHeadersCount = settings.maxHeaderCount + 1;
}

async function close(run: Run): Promise<void> {
  // From here /readyz answers 503 draining and gateway_ready reads 0; the admin port
  // stays open until the API port has drained, so a load balancer can see it.
  run.readiness.startDraining();
  const leftMs = await drainApiPort(run.servers.api, run.current.config.server, run.opening);
  await release(run, leftMs);
}

/** `flushWithinMs`: what the drain left for the last spans. */
function release(run: Run, flushWithinMs: number): Promise<void> {
  const { api, admin, listenerTls } = run.servers;
  return (run.released ??= (async () => {
    run.expiringCounter?.stop();
    listenerTls?.close();
    api.closeAllConnections();
    await Promise.all([api.server, ...(admin === undefined ? [] : [admin])].map(closeServer));
    await run.current.chain.close();
    // Once requests have drained: the last spans are queued, and sent now.
    await run.spanExport?.shutdown(flushWithinMs);
    await run.chainDeps.backend.credentials.close();
  })());
}

import { lowerThreadPoolPriority } from './concurrency/thread-pool-priority.js';
import { createAdminServer } from './admin/admin-server.js';
import { createMetrics, type GatewayMetrics } from './observability/metrics.js';
import type { GatewayConfig } from './config/config-schema.js';
import type { Backend } from './backends/backend.js';
import { createMemoryBackend } from './backends/memory/memory-backend.js';
import { createRedisBackend } from './backends/redis/redis-backend.js';
import type { CredentialStore, KeyRecord } from './credentials/credential-store.js';
import { generateKeyPair, randomBase62 } from './credentials/generate-key-pair.js';
import { createSecretHasher, type SecretHasher } from './credentials/secret-hasher.js';
import { createGatewayServer } from './http/create-server.js';
import { closeServer, drain, listenOn } from './http/listen.js';
import type { Logger } from './observability/create-logger.js';
import { buildPipeline } from './pipeline.js';
import { createSigningKeys } from './tokens/signing-key.js';
import { createTokenSigner } from './tokens/token-signer.js';
import { loadListenerTls } from './tls/listener-tls.js';
import { buildVersion } from './observability/build-version.js';
import { MAX_PATH_CHARS } from './observability/access-log.js';
import { throttledWarnings } from './observability/throttled-warnings.js';
import { loadSpanExport } from './tracing/load-span-export.js';

export interface GatewayDeps {
  logger: Logger;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** Replaces the backend the config names (tests pass a real one of their own). */
  backend?: Backend;
  /**
   * A worker of `serve --workers`: no admin port (the primary serves one for the set), and
   * the start is logged as `worker listening`.
   */
  worker?: boolean;
}

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
  readonly bootstrap: { key: string; secret: string; subject: string } | undefined;
  readonly store: CredentialStore;
  readonly metrics: GatewayMetrics;
}

/** Settings bound to sockets or connections made at start. */
const RESTART_ONLY = [
  'server.host',
  'server.port',
  'server.workers',
  'server.threadPoolNice',
  'admin',
  'credentials',
  // The store is made at start, with its retention.
  'keys.retainEndedDays',
  // One span exporter per process, made at start (sampling and propagation do reload).
  'tracing.otlp',
  'tracing.serviceName',
] as const;

/**
 * The composition root: with pipeline.ts (the part rebuilt per configuration), the only
 * place that picks production implementations. The CLI's one-off commands open their
 * store through createBackend below.
 */
export async function createGateway(initial: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  // A worker's reloads are counted by its primary, which decides them.
  const metrics = createMetrics({
    countReloads: deps.worker !== true,
    now,
    // HTTPS on or off needs a restart: the TLS families exist from the start or never.
    tls: initial.server.tls !== undefined,
  });
  const backend = deps.backend ?? createBackend(initial, now, logger, metrics);
  const store = backend.credentials;
  // Connected or not, the start goes on; waiting for the first outcome (a few seconds at
  // most) only puts its log line first and makes the first scrape tell the truth.
  await store.health.settled;
  const hasher = createSecretHasher(initial.credentials.bcryptCost);
  const bootstrap = await makeBootstrapPair(initial, store, hasher, now);
  const dummyHash = await hasher.hash(randomBase62(48));
  // After a first bcrypt run: the pool's threads exist from then on.
  if (initial.server.threadPoolNice > 0) lowerThreadPoolPriority(initial.server.threadPoolNice);
  // close() may come while listen() is still opening the ports (a signal at start-up).
  let closing = false;
  // gateway_ready follows the store's connection and the drain, whoever asks (or not).
  const showReadiness = (): void => metrics.setReady(store.health.ready() && !closing);
  store.health.onChange(showReadiness);
  showReadiness();

  let config = initial;
  const exportProblem = (cause: string, suppressed: number): void =>
    logger.warn({ cause, suppressed }, 'span export problem (spans may be lost)');
  // The OpenTelemetry SDK is imported here, and only when an endpoint is configured.
  const { otlp } = initial.tracing;
  const spanExport = await loadSpanExport(
    otlp === undefined
      ? undefined
      : {
          ...otlp,
          serviceName: initial.tracing.serviceName,
          serviceVersion: buildVersion(),
          maxPathChars: MAX_PATH_CHARS,
          // With a collector down every batch fails: one line a minute, the rest counted.
          warn: throttledWarnings((_, cause, suppressed) => exportProblem(cause, suppressed))(
            'collector',
          ),
          warnAtShutdown: (cause) => exportProblem(cause, 0),
        },
  );
  // The CLI hands a key in (lifecycle/supervisor.ts chose it); a gateway made otherwise
  // generates its own here, kept across reloads.
  const signingKeys = createSigningKeys((message) => logger.warn(message));
  let signer = await createTokenSigner(signingKeys.resolve(config.tokens), now);
  // One warning per issuer a minute at most, kept across reloads like the fetch counters.
  const jwksFetchFailed = throttledWarnings(
    (issuer, reason, suppressed) =>
      logger.warn({ issuer, reason, suppressed }, 'JWKS fetch failed'),
    now,
  );
  let pipeline = await buildPipeline(config, {
    backend,
    hasher,
    dummyHash,
    signer,
    metrics,
    logger,
    now,
    spans: spanExport?.sink,
    jwksFetchFailed,
  });

  store.subscribe(
    (revocation, publishedAtMs) => {
      if (revocation.kind === 'key') pipeline.basic.evictKey(revocation.key);
      else {
        pipeline.basic.evictSubject(revocation.subject);
        pipeline.bearer.evictSubject(revocation.subject);
      }
      // The publisher's clock against this one: a skew between them shows in the lag, and
      // one that puts the publication ahead counts as no lag.
      if (publishedAtMs !== undefined)
        metrics.observeRevocationLag(Math.max(0, now() - publishedAtMs) / 1000);
    },
    (start) => {
      pipeline.basic.flush();
      if (start === 'again') metrics.countRevocationResubscribe();
    },
  );

  const listenerTls =
    config.server.tls === undefined
      ? undefined
      : await loadListenerTls(config.server.tls, {
          log: logger,
          now,
          onServed: (notAfterSec) => metrics.setTlsCertificateNotAfter(notAfterSec),
          onReload: (outcome) => metrics.countTlsReload(outcome),
        });
  const api = createGatewayServer(
    (req, res) => pipeline.handler(req, res),
    config.server,
    listenerTls?.serverOptions,
    (socket, code, requestId) => pipeline.rejected(socket, code, requestId),
  );
  const { server } = api;
  metrics.readFrom({
    openConnections: () => api.connections(),
    cacheEntries: (method) =>
      method === 'basic' ? pipeline.basic.cacheEntries() : pipeline.bearer.cacheEntries(),
    ...(backend.redisConnections && { redisConnections: backend.redisConnections }),
    jwksFetchedAt: () => pipeline.jwksFetchedAt(),
  });
  if (api.secure !== undefined) listenerTls?.attach(api.secure);
  let opening: Promise<void> = Promise.resolve();
  const admin =
    config.admin.enabled && deps.worker !== true
      ? createAdminServer({
          metrics,
          ready: () =>
            store.ping().then(
              () => true,
              () => false,
            ),
          draining: () => closing,
        })
      : undefined;

  // Frees everything, once: after a drain, or at once when a port failed to open.
  let released: Promise<void> | undefined;
  // `flushWithinMs`: what the drain left for the last spans.
  const release = (flushWithinMs: number): Promise<void> =>
    (released ??= (async () => {
      listenerTls?.close();
      api.closeAllConnections();
      await Promise.all([server, ...(admin === undefined ? [] : [admin])].map(closeServer));
      await pipeline.close();
      // Once requests have drained: the last spans are queued, and sent now.
      await spanExport?.shutdown(flushWithinMs);
      await store.close();
    })());

  return {
    bootstrap,
    store,
    metrics,
    inFlight: () => api.inFlight(),
    async listen() {
      const opened = (async () => {
        const port = await listenOn(server, config.server.host, config.server.port, 'API port');
        const adminPort =
          admin === undefined || closing
            ? undefined
            : await listenOn(admin, config.admin.host, config.admin.port, 'admin port');
        return { port, adminPort };
      })();
      opening = opened.then(
        () => undefined,
        () => undefined,
      );
      let bound: { port: number; adminPort: number | undefined };
      try {
        bound = await opened;
      } catch (error) {
        // Nothing may keep serving (nor keep the process alive) once the start has failed.
        // No drain to bound the flush: one export timeout at most.
        await release(Infinity).catch((cleanup: unknown) =>
          logger.error({ err: cleanup }, 'freeing what was opened failed'),
        );
        throw error;
      }
      const { port, adminPort } = bound;
      const storeName = deps.backend === undefined ? config.credentials.store : 'injected';
      logger.info(
        { host: config.server.host, port, admin_port: adminPort, store: storeName },
        deps.worker === true ? 'worker listening' : 'gateway listening',
      );
      // Written at once (logs are batched otherwise): supervisors and tests wait for it.
      logger.flush();
      return { port, adminPort };
    },
    async reload(next) {
      const kept: string[] = RESTART_ONLY.filter(
        (path) => JSON.stringify(pick(config, path)) !== JSON.stringify(pick(next, path)),
      );
      // HTTPS turned on or off needs a new server; new files for it are read below.
      const tls =
        next.server.tls !== undefined && listenerTls !== undefined
          ? next.server.tls
          : config.server.tls;
      if (tls !== next.server.tls) kept.push('server.tls');
      if (kept.length > 0)
        logger.warn({ settings: kept }, 'these settings need a restart; the running values stay');
      const effective: GatewayConfig = {
        ...next,
        server: { ...next.server, host: config.server.host, port: config.server.port, tls },
        admin: config.admin,
        credentials: config.credentials,
      };
      const nextSigner =
        JSON.stringify(effective.tokens) === JSON.stringify(config.tokens)
          ? signer
          : await createTokenSigner(signingKeys.resolve(effective.tokens), now);
      const nextPipeline = await buildPipeline(effective, {
        backend,
        hasher,
        dummyHash,
        signer: nextSigner,
        metrics,
        logger,
        now,
        spans: spanExport?.sink,
        jwksFetchFailed,
        previous: pipeline,
      });
      const previous = pipeline;
      config = effective;
      signer = nextSigner;
      pipeline = nextPipeline;
      server.headersTimeout = config.server.headersTimeoutMs;
      server.requestTimeout = config.server.requestTimeoutMs;
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
      server.maxHeadersCount = config.server.maxHeaderCount + 1;
      // Requests already forwarded keep the old upstream connections until they finish.
      setTimeout(() => void previous.close(), config.server.drainTimeoutMs).unref();
      // A certificate that does not pass is logged and the served one stays: not a failed reload.
      if (tls !== undefined) await listenerTls?.reload('reload', tls);
      const cache = (kept: boolean) => (kept ? 'kept' : 'emptied');
      logger.info(
        {
          basic_cache: cache(nextPipeline.basic.verified === previous.basic.verified),
          bearer_cache: cache(nextPipeline.bearer.verified === previous.bearer.verified),
        },
        'configuration reloaded',
      );
    },
    async close() {
      // From here /readyz answers 503 draining and gateway_ready reads 0; the admin port
      // stays open until the API port has drained, so a load balancer can see it.
      closing = true;
      showReadiness();
      api.closeAfterResponses();
      // The drain timeout bounds the whole shutdown, the delay included.
      const { drainTimeoutMs, shutdownDelayMs, shutdownQuietMs, keepAliveTimeoutMs } =
        config.server;
      const endsAtMs = performance.now() + drainTimeoutMs;
      const deadline = elapsed(drainTimeoutMs);
      // However long clients keep coming, what they sent last still has the keep-alive
      // timeout's length to be answered and its connection closed before the deadline.
      const lastAccept = Promise.race([
        elapsed(Math.max(shutdownDelayMs, drainTimeoutMs - keepAliveTimeoutMs)),
        deadline,
      ]);
      await opening;
      // Serving on while a load balancer that polls /readyz stops sending here: a refused
      // connection in that time would be a lost request.
      await Promise.race([elapsed(shutdownDelayMs), deadline]);
      // Then on until no client is connected, nor connects, for shutdownQuietMs. Closing the
      // port resets the connections queued on it, and one accepted a moment before has its
      // request on the way: so it stays open while clients still come, each one that comes
      // back after the `Connection: close` of its last answer, or that a balancer still sends.
      await api.untilIdle(shutdownQuietMs, lastAccept);
      await drain(server, deadline, () => api.closeAllConnections());
      await release(endsAtMs - performance.now());
    },
  };
}

/** Resolves `ms` from now, keeping no process alive for it. */
function elapsed(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function pick(config: GatewayConfig, path: string): unknown {
  let value: unknown = config;
  for (const part of path.split('.')) value = (value as Record<string, unknown>)[part];
  return value;
}

/**
 * The backend the configuration names, the one choice of it: Redis, or the in-process one
 * seeded from YAML. With a logger, Redis's connection states and breakers are logged, and
 * with metrics its breakers shown (the gateway's; one-off commands say what failed themselves).
 */
export function createBackend(
  config: GatewayConfig,
  now: () => number = Date.now,
  log?: Logger,
  metrics?: GatewayMetrics,
): Backend {
  const retention = { retainEndedSec: config.keys.retainEndedDays * 86_400 };
  if (config.credentials.store === 'redis')
    return createRedisBackend(config.credentials.redis, {
      now,
      log,
      retention,
      ...(metrics === undefined
        ? {}
        : { onBreakerChange: (target, open) => metrics.setRedisBreaker(target, open) }),
    });
  const { seed } = config.credentials;
  const epoch = new Date(0).toISOString();
  return createMemoryBackend({
    seed: {
      keys: seed.keys.map((k) => ({ ...k, status: 'active', createdAt: epoch })),
      users: seed.users.map((u) => ({ ...u, createdAt: epoch })),
    },
    now,
    retention,
  });
}

async function makeBootstrapPair(
  config: GatewayConfig,
  store: CredentialStore,
  hasher: SecretHasher,
  now: () => number,
): Promise<Gateway['bootstrap']> {
  if (!config.credentials.bootstrap.enabled || config.credentials.store !== 'memory')
    return undefined;
  const subject = config.credentials.bootstrap.subject;
  const { key, secret } = generateKeyPair(subject);
  const record: KeyRecord = {
    key,
    subject,
    secretHash: await hasher.hash(secret),
    label: 'bootstrap',
    status: 'active',
    createdAt: new Date(now()).toISOString(),
    scopes: config.credentials.bootstrap.scopes,
  };
  await store.createKey(record, Number.MAX_SAFE_INTEGER);
  return { key, secret, subject };
}

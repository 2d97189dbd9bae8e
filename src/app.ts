import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminServer } from './admin/admin-server.js';
import { createMetrics } from './admin/metrics.js';
import { createAuthenticator } from './auth/authenticate.js';
import { createBasicAuthenticator } from './auth/basic-authenticator.js';
import { createLoginThrottle } from './auth/login-throttle.js';
import { createSecretVerifier } from './auth/secret-verifier.js';
import { createBearerVerifier } from './auth/jwt/bearer-verifier.js';
import { createKeySource } from './auth/jwt/key-sources.js';
import type { GatewayConfig } from './config/config-schema.js';
import type { CredentialStore, KeyRecord } from './credentials/credential-store.js';
import { generateKeyPair, randomBase62 } from './credentials/generate-key-pair.js';
import { createMemoryStore } from './credentials/memory-store.js';
import { createRedisStore } from './credentials/redis-store.js';
import { createSecretHasher } from './credentials/secret-hasher.js';
import { createJwksEndpoint } from './endpoints/jwks-endpoint.js';
import { createKeysEndpoints, KEY_ID } from './endpoints/keys-endpoints.js';
import { createTokenEndpoint } from './endpoints/token-endpoint.js';
import { createGatewayServer } from './http/create-server.js';
import { createRequestHandler } from './http/request-handler.js';
import type { ProxyRoute, RouteEntry } from './http/routes.js';
import type { Logger } from './observability/create-logger.js';
import { createForwarder, createUpstreamTarget, type UpstreamTarget } from './proxy/forwarder.js';
import { createHeaderPolicy } from './proxy/upstream-headers.js';
import { createReferenceUpstream } from './reference-upstream/reference-upstream.js';
import { createRouteTable } from './routing/route-table.js';
import { createTokenSigner, GATEWAY_TOKEN_SOURCE } from './tokens/token-signer.js';

export interface GatewayDeps {
  logger: Logger;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** Replaces the store the config names (tests pass a real one of their own). */
  store?: CredentialStore;
}

export interface Gateway {
  /** Binds the ports; resolves with the bound addresses. */
  listen(): Promise<{ port: number; adminPort: number | undefined }>;
  /** Stops accepting, waits for in-flight requests (up to the drain timeout), frees everything. */
  close(): Promise<void>;
  /** A key pair made at start for the zero-setup demo (memory store only), shown once. */
  readonly bootstrap: { key: string; secret: string; subject: string } | undefined;
  readonly store: CredentialStore;
}

/** The composition root: the only place that picks production implementations. */
export async function createGateway(config: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const store = deps.store ?? createStore(config);
  const hasher = createSecretHasher(config.credentials.bcryptCost);

  const bootstrap = await makeBootstrapPair(config, store, hasher, now);

  const hashing = {
    hasher,
    dummyHash: await hasher.hash(randomBase62(48)),
    maxConcurrentHashes: config.auth.basic.maxConcurrentHashes,
    maxQueuedHashes: config.auth.basic.maxQueuedHashes,
  };
  // One bound on bcrypt for Basic checks, password exchanges and new pairs alike.
  const verifier = createSecretVerifier(hashing);
  const basic = createBasicAuthenticator({
    store,
    ...hashing,
    verifier,
    cacheTtlSec: config.auth.basic.cache.ttlSec,
    cacheMaxEntries: config.auth.basic.cache.maxEntries,
  });
  const signer = await createTokenSigner(config.tokens, now);
  if (signer.ephemeral) {
    logger.warn(
      'tokens are signed with a key generated at start: they stop working on restart and other instances reject them; set tokens.signingKey',
    );
  }
  const bearer = createBearerVerifier({
    sources: [
      signer.keySource,
      ...config.auth.bearer.issuers.map((issuer) => createKeySource(issuer)),
    ],
    clockToleranceSec: config.auth.bearer.clockToleranceSec,
    cacheTtlSec: config.auth.bearer.cache.ttlSec,
    cacheMaxEntries: config.auth.bearer.cache.maxEntries,
    now,
  });
  store.subscribe(
    (revocation) => {
      if (revocation.kind === 'key') basic.evictKey(revocation.key);
      else {
        basic.evictSubject(revocation.subject);
        bearer.evictSubject(revocation.subject);
      }
    },
    () => basic.flush(),
  );
  const authenticator = createAuthenticator({
    realm: config.auth.realm,
    basic,
    bearer,
    maxTokenBytes: config.auth.bearer.maxTokenBytes,
  });

  const helpers: Server[] = [];
  const upstreams = new Map<string, UpstreamTarget>();
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    let url: URL;
    if (upstream.url === 'builtin') {
      const reference = createReferenceUpstream(config.referenceUpstream.accounts);
      helpers.push(reference);
      url = new URL(`http://127.0.0.1:${await listenOn(reference, '127.0.0.1', 0)}`);
    } else {
      url = new URL(upstream.url);
    }
    upstreams.set(name, createUpstreamTarget(name, url, upstream));
  }

  const exact = new Map<string, RouteEntry>();
  for (const route of config.routes) {
    const upstream = upstreams.get(route.upstream);
    if (upstream === undefined)
      throw new Error(`route ${route.name}: unknown upstream ${route.upstream}`);
    const entry: ProxyRoute = {
      kind: 'proxy',
      name: route.name,
      methods: new Set(route.methods),
      allow: route.methods,
      schemes: route.auth,
      upstream,
      upstreamPath: route.upstreamPath,
    };
    for (const path of route.paths) exact.set(path, entry);
  }
  const keys = createKeysEndpoints({
    store,
    verifier,
    schemes: ['basic', 'bearer'],
    realm: config.auth.realm,
    maxActivePerSubject: config.keys.maxActivePerSubject,
    maxBodyBytes: config.server.maxBodyBytes,
    gatewayTokenSource: GATEWAY_TOKEN_SOURCE,
    now,
  });
  exact.set('/keys', keys.collection);
  exact.set(
    '/auth/token',
    createTokenEndpoint({
      store,
      verifier,
      signer,
      throttle: createLoginThrottle(config.login, now),
      maxBodyBytes: config.server.maxBodyBytes,
    }),
  );
  exact.set('/.well-known/jwks.json', createJwksEndpoint(signer.jwks));

  const metrics = createMetrics();
  const handler = createRequestHandler({
    routes: createRouteTable({
      exact,
      parameterized: [{ prefix: '/keys/', param: KEY_ID, entry: keys.item }],
    }),
    authenticator,
    forwarder: createForwarder({
      connectTimeoutMs: Math.min(...Object.values(config.upstreams).map((u) => u.connectTimeoutMs)),
    }),
    headerPolicy: createHeaderPolicy({
      allowHeaders: config.forwarding.allowHeaders,
      forwardAuthorization: config.forwarding.forwardAuthorization,
      trustedProxies: config.server.trustedProxies,
    }),
    maxHeaderCount: config.server.maxHeaderCount,
    logger,
    logRequests: config.logging.requests,
    metrics,
  });
  const server = createGatewayServer(handler, config.server);
  const admin = config.admin.enabled
    ? createAdminServer({
        metrics,
        ready: () =>
          store.ping().then(
            () => true,
            () => false,
          ),
      })
    : undefined;

  // close() may come while listen() is still opening the ports (a signal at start-up).
  let closing = false;
  let opening: Promise<void> = Promise.resolve();
  return {
    bootstrap,
    store,
    async listen() {
      const opened = (async () => {
        const port = await listenOn(server, config.server.host, config.server.port);
        const adminPort =
          admin === undefined || closing
            ? undefined
            : await listenOn(admin, config.admin.host, config.admin.port);
        return { port, adminPort };
      })();
      opening = opened.then(
        () => undefined,
        () => undefined,
      );
      const { port, adminPort } = await opened;
      logger.info(
        {
          host: config.server.host,
          port,
          admin_port: adminPort,
          store: store === deps.store ? 'injected' : config.credentials.store,
        },
        'gateway listening',
      );
      // Written at once (logs are batched otherwise): supervisors and tests wait for it.
      logger.flush();
      return { port, adminPort };
    },
    async close() {
      closing = true;
      await opening;
      await drain(server, config.server.drainTimeoutMs);
      await Promise.all([...(admin === undefined ? [] : [admin]), ...helpers].map(closeServer));
      for (const upstream of upstreams.values()) upstream.agent.destroy();
      await store.close();
    },
  };
}

function createStore(config: GatewayConfig): CredentialStore {
  if (config.credentials.store === 'redis') return createRedisStore(config.credentials.redis);
  const { seed } = config.credentials;
  return createMemoryStore({
    keys: seed.keys.map((k) => ({
      key: k.key,
      subject: k.subject,
      secretHash: k.secretHash,
      label: k.label,
      status: 'active',
      createdAt: new Date(0).toISOString(),
    })),
    users: seed.users.map((u) => ({
      username: u.username,
      subject: u.subject,
      passwordHash: u.passwordHash,
      createdAt: new Date(0).toISOString(),
    })),
  });
}

async function makeBootstrapPair(
  config: GatewayConfig,
  store: CredentialStore,
  hasher: ReturnType<typeof createSecretHasher>,
  now: () => number,
): Promise<Gateway['bootstrap']> {
  if (!config.credentials.bootstrap.enabled || config.credentials.store !== 'memory')
    return undefined;
  const { key, secret } = generateKeyPair();
  const subject = config.credentials.bootstrap.subject;
  const record: KeyRecord = {
    key,
    subject,
    secretHash: await hasher.hash(secret),
    label: 'bootstrap',
    status: 'active',
    createdAt: new Date(now()).toISOString(),
  };
  await store.createKey(record, Number.MAX_SAFE_INTEGER);
  return { key, secret, subject };
}

function listenOn(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/** Stop accepting, let in-flight requests finish, then cut whatever is left. */
async function drain(server: Server, timeoutMs: number): Promise<void> {
  const closed = closeServer(server);
  const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref());
  await Promise.race([closed, deadline]);
  clearInterval(idleSweep);
  server.closeAllConnections();
  await closed;
}

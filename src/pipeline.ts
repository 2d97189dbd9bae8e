import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { describeFailure } from './errors/describe-failure.js';
import type { GatewayMetrics, JwksKeySetTime } from './observability/metrics.js';
import { createAuthenticator } from './auth/authenticate.js';
import { createBasicAuthenticator, type BasicAuthenticator } from './auth/basic-authenticator.js';
import { createBearerVerifier, type BearerVerifier } from './auth/jwt/bearer-verifier.js';
import { createTokenUserCheck } from './auth/jwt/check-token-user.js';
import { createKeySource } from './auth/jwt/key-sources.js';
import { createConfiguredRateLimiter, toRatePolicy } from './protection/configured-rate-limiter.js';
import type { LockoutEvents } from './protection/guard-attempt.js';
import type { Lockout, LockoutTarget } from './protection/lockout.js';
import type { Backend } from './backends/backend.js';
import { createLastUseRecorder } from './credentials/last-use-recorder.js';
import { createSecretVerifier } from './auth/secret-verifier.js';
import { createRehashOnUse, type RehashEvent } from './auth/rehash-on-use.js';
import { createVerifiedRecords, type RecordEvents } from './auth/verified-records.js';
import { configuredFleetKey } from './credentials/fleet-key-setting.js';
import type { GatewayConfig } from './config/config-schema.js';
import type { SecretHasher } from './credentials/secret-hasher.js';
import { createJwksEndpoint } from './endpoints/jwks-endpoint.js';
import { createKeysEndpoints } from './endpoints/keys-endpoints.js';
import { KEY_ID } from './identity/identity-formats.js';
import { MAX_KEY_CHARS } from './identity/key-id.js';
import { createTokenEndpoint } from './endpoints/token-endpoint.js';
import { createOpenApiEndpoint } from './endpoints/openapi-endpoint.js';
import { OPENAPI_PATH } from './openapi/build-openapi-document.js';
import { openApiJson } from './openapi/openapi-json.js';
import type { ClientAddressing } from './http/client-address.js';
import { createTrustedProxies } from './http/ip-network.js';
import { closeServer, listenOn } from './http/listen.js';
import { createRejectedRequestLog, type RejectedRequestLog } from './http/rejected-request.js';
import { createRequestHandler, type RequestHandler } from './http/request-handler.js';
import type { ForwardAuthRoute, ProxyRoute, RouteEntry } from './http/routes.js';
import type { Logger } from './observability/create-logger.js';
import { throttledWarnings } from './observability/throttled-warnings.js';
import { createUpstreamTarget, type Forwarder } from './proxy/forwarder.js';
import { createHttpProxyForwarder } from './proxy/http-proxy-forwarder.js';
import { createUndiciForwarder } from './proxy/undici-forwarder.js';
import { readUpstreamTls } from './tls/upstream-tls.js';
import { createHeaderPolicy } from './proxy/upstream-headers.js';
import { createReferenceUpstream } from './reference-upstream/reference-upstream.js';
import { createRouteTable } from './routing/route-table.js';
import {
  GATEWAY_TOKEN_SOURCE,
  TOKEN_GENERATION_CLAIM,
  type TokenSigner,
} from './tokens/token-signer.js';
import type { SpanSink } from './tracing/span-sink.js';

/** What lives for one configuration: rebuilt on SIGHUP while the listening sockets stay. */
export interface Pipeline {
  readonly handler: RequestHandler;
  /** Counts and logs the requests Node's parser refused (see create-server). */
  readonly rejected: RejectedRequestLog;
  readonly basic: BasicAuthenticator;
  readonly bearer: BearerVerifier;
  /** What its verified caches depend on (verifiedCacheSettings), as it was built. */
  readonly cacheSettings: VerifiedCacheSettings;
  /** When the key set in use of each JWKS issuer was fetched (those fetched so far). */
  jwksFetchedAt(): JwksKeySetTime[];
  /** Frees the upstream connections and the built-in upstream once requests have drained. */
  close(): Promise<void>;
}

export interface PipelineDeps {
  /** Where credentials, lockout counters and buckets live (app.ts picks it once). */
  backend: Backend;
  hasher: SecretHasher;
  /** A hash of a random secret, compared when a key or user does not exist. */
  dummyHash: string;
  signer: TokenSigner;
  metrics: GatewayMetrics;
  logger: Logger;
  now: () => number;
  /** The process's span export (made once in app.ts); undefined when spans are not exported. */
  spans?: SpanSink | undefined;
  /** Logs an issuer's failed JWKS fetch (made once in app.ts: its pace outlives a reload). */
  jwksFetchFailed?: ((issuer: string) => (reason: string) => void) | undefined;
  /** The pipeline this one replaces (a reload): its verified caches are kept if still valid. */
  previous?: Pipeline | undefined;
}

/**
 * What a verified cache's entries depend on, one string per cache: a reload whose settings
 * give the same string keeps the cache (10 reloads in 2 s used to empty it 10 times, each
 * costing every client a bcrypt run), any other empties it.
 *
 * Basic: the whole `credentials` section (the store, its Redis connection and key prefix,
 * bcryptCost, the memory store's seed; a reload cannot change it, but were that to change,
 * so would what a cached pair was checked against) and `auth.basic.cache` (a shorter TTL or
 * fewer entries apply to what is cached). Not the lockout, the bcrypt bounds, `keys` or the
 * routes: a cached pair skips the first two, and the others act after authentication.
 *
 * Bearer: everything in `auth.bearer` (the issuers, their keys and allow-lists, the clock
 * tolerance, the cache, the token size bound) with the content of each `publicKeyFile`,
 * read again by every reload, and the gateway's own tokens' settings but `lifetimeSec`
 * (which only bounds tokens issued from then on). A JWKS's content is not among them: its
 * key sets are fetched again after a reload anyway, and a removed key stops working there
 * by the same cache TTL as without a reload.
 */
export interface VerifiedCacheSettings {
  readonly basic: string;
  readonly bearer: string;
}

export function verifiedCacheSettings(config: GatewayConfig): VerifiedCacheSettings {
  const tokens = { ...config.tokens, lifetimeSec: undefined };
  const keyFiles = config.auth.bearer.issuers.map((issuer) => {
    if (issuer.publicKeyFile === undefined) return null;
    try {
      return readFileSync(issuer.publicKeyFile, 'utf8');
    } catch (error) {
      // The pipeline's build fails on it too; never equal to what was read before.
      return { unreadable: String(error), at: performance.now() };
    }
  });
  return {
    basic: JSON.stringify([config.credentials, config.auth.basic.cache]),
    bearer: JSON.stringify([config.auth.bearer, tokens, keyFiles]),
  };
}

export async function buildPipeline(config: GatewayConfig, deps: PipelineDeps): Promise<Pipeline> {
  const { backend, signer, now, previous } = deps;
  const cacheSettings = verifiedCacheSettings(config);
  const keptBasic =
    previous?.cacheSettings.basic === cacheSettings.basic ? previous.basic.verified : undefined;
  const keptBearer =
    previous?.cacheSettings.bearer === cacheSettings.bearer ? previous.bearer.verified : undefined;
  const store = backend.credentials;
  const countedHasher: SecretHasher = {
    hash: (secret) => deps.hasher.hash(secret),
    verify: (secret, hash) => {
      deps.metrics.countBcryptCompare();
      return deps.hasher.verify(secret, hash);
    },
  };
  // Off (`lockout.enabled: false`): nothing counted, failures still logged and counted.
  const lockout = config.lockout.enabled ? backend.lockout(config.lockout) : OPEN_LOCKOUT;
  const events = lockoutEvents(deps.logger, deps.metrics);
  // One bound on bcrypt for Basic checks, password exchanges and new pairs alike.
  const hashing = {
    hasher: countedHasher,
    dummyHash: deps.dummyHash,
    maxConcurrentHashes: config.auth.basic.maxConcurrentHashes,
    maxQueuedHashes: config.auth.basic.maxQueuedHashes,
  };
  const verifier = createSecretVerifier(hashing);
  // Hashes of another cost or variant are rewritten on their next success (mixed costs tell
  // known keys from unknown ones by time), within the same bcrypt bound.
  const rehash = createRehashOnUse({
    store,
    verifier,
    onRehash: (event) => reportRehash(deps.logger, deps.metrics, event),
  });
  // Last use of each pair, written in batches (keys.lastUsedIntervalSec; 0: not kept).
  const lastUse =
    config.keys.lastUsedIntervalSec === 0
      ? undefined
      : createLastUseRecorder({
          write: (uses) => store.recordLastUse(uses),
          intervalMs: config.keys.lastUsedIntervalSec * 1000,
          now,
          onError: (err: unknown) =>
            deps.logger.warn({ err }, 'last use of key pairs not recorded; retried next batch'),
        });
  const recordSettings = config.auth.basic.verifiedRecords;
  const records = recordSettings.enabled
    ? createVerifiedRecords({
        store,
        fleetKey: configuredFleetKey(recordSettings),
        ttlSec: recordSettings.ttlSec,
        now,
        events: recordEvents(deps.logger, deps.metrics),
      })
    : undefined;
  const basic = createBasicAuthenticator({
    store,
    ...(records && { records }),
    ...hashing,
    verifier,
    rehash,
    lockout: { lockout, events },
    cacheTtlSec: config.auth.basic.cache.ttlSec,
    cacheMaxEntries: config.auth.basic.cache.maxEntries,
    now,
    ...(lastUse === undefined ? {} : { lastUse }),
    cacheCounters: deps.metrics.cache.basic,
    ...(keptBasic && { verified: keptBasic }),
  });
  const issuers = config.auth.bearer.issuers.map((issuer) => {
    const label = issuer.issuer ?? issuer.name;
    const fetches = issuer.jwksUrl === undefined ? undefined : deps.metrics.jwksFetches(label);
    const onFetchFailure = deps.jwksFetchFailed?.(label);
    return {
      label,
      source: createKeySource(issuer, {
        now,
        ...(fetches && { fetches }),
        ...(onFetchFailure && { onFetchFailure }),
      }),
    };
  });
  const bearer = createBearerVerifier({
    sources: [signer.keySource, ...issuers.map(({ source }) => source)],
    clockToleranceSec: config.auth.bearer.clockToleranceSec,
    cacheTtlSec: config.auth.bearer.cache.ttlSec,
    cacheMaxEntries: config.auth.bearer.cache.maxEntries,
    now,
    cacheCounters: deps.metrics.cache.bearer,
    ...(keptBearer && { verified: keptBearer }),
    ownTokens: {
      source: GATEWAY_TOKEN_SOURCE,
      check: createTokenUserCheck(store, TOKEN_GENERATION_CLAIM),
    },
  });

  const helpers: Server[] = [];
  const upstreams = new Map<string, Forwarder>();
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    let url: URL;
    if (upstream.url === 'builtin') {
      const reference = createReferenceUpstream(config.referenceUpstream.accounts);
      helpers.push(reference);
      url = new URL(`http://127.0.0.1:${await listenOn(reference, '127.0.0.1', 0)}`);
    } else {
      url = new URL(upstream.url);
    }
    const tls = upstream.tls === undefined ? {} : await readUpstreamTls(upstream.tls);
    const target = createUpstreamTarget(name, url, upstream, tls);
    const engine = upstream.engine === 'undici' ? createUndiciForwarder : createHttpProxyForwarder;
    upstreams.set(name, engine(target, deps.metrics.upstream(name)));
  }

  const headerPolicy = createHeaderPolicy({
    allowHeaders: config.forwarding.allowHeaders,
    forwardAuthorization: config.forwarding.forwardAuthorization,
  });
  const addressing: ClientAddressing = {
    trusted: createTrustedProxies(config.server.trustedProxies),
    ...config.server.clientNetworks,
  };
  // Allowed (a gateway reachable only through its load balancer may trust them all), but
  // then every client names the address its lockout and address limits count: say so.
  const everyone = config.server.trustedProxies.filter((entry) => entry.endsWith('/0'));
  if (everyone.length > 0)
    deps.logger.warn(
      { trustedProxies: everyone },
      'server.trustedProxies trusts every address: any client that reaches this port directly chooses the address its lockout and address rate limit count',
    );
  const exact = new Map<string, RouteEntry>();
  const prefixes: { prefix: string; entry: RouteEntry }[] = [];
  for (const route of config.routes) {
    const forwarder = upstreams.get(route.upstream);
    if (forwarder === undefined)
      throw new Error(`route ${route.name}: unknown upstream ${route.upstream}`);
    const pathPrefix = forwarder.upstream.basePath + route.upstreamPath;
    const entry: ProxyRoute = {
      kind: 'proxy',
      name: route.name,
      methods: new Set(route.methods),
      allow: route.methods,
      schemes: route.auth,
      scopes: route.scopes,
      forwarder,
      pathPrefix,
      // Under a prefix, the upstream receives upstreamPath, one `/` and the matched rest.
      restBase: `${pathPrefix.replace(/\/$/, '')}/`,
      rateLimit: toRatePolicy(route.rateLimit),
    };
    // One object per route, under its paths and its prefixes alike: the route table tells
    // routes apart by identity (a spelling another route decides is refused).
    for (const path of route.paths) exact.set(path, entry);
    for (const prefix of route.prefixes) prefixes.push({ prefix, entry });
  }
  const authenticator = createAuthenticator({
    realm: config.auth.realm,
    basic,
    bearer,
    maxTokenBytes: config.auth.bearer.maxTokenBytes,
  });
  const keys = createKeysEndpoints({
    store,
    verifier,
    schemes: ['basic', 'bearer'],
    refuse: authenticator.refuse,
    refuseScope: authenticator.refuseScope,
    maxActivePerSubject: config.keys.maxActivePerSubject,
    requiredScopes: config.keys.requiredScopes,
    maxBodyBytes: config.server.maxBodyBytes,
    gatewayTokenSource: GATEWAY_TOKEN_SOURCE,
    onRevoked: (key) => basic.evictKey(key),
    now,
  });
  exact.set('/keys', keys.collection);
  exact.set(
    '/auth/token',
    createTokenEndpoint({
      store,
      verifier,
      signer,
      lockout,
      lockoutEvents: events,
      refuse: authenticator.refuse,
      maxBodyBytes: config.server.maxBodyBytes,
      rehash,
    }),
  );
  exact.set('/.well-known/jwks.json', createJwksEndpoint(signer.jwks));
  exact.set(OPENAPI_PATH, createOpenApiEndpoint(openApiJson()));
  if (config.forwardAuth.enabled) {
    const check: ForwardAuthRoute = {
      kind: 'forward-auth',
      name: 'forward-auth',
      cacheMaxAgeSec: config.forwardAuth.cacheMaxAgeSec,
    };
    exact.set(config.forwardAuth.path, check);
    prefixes.push({ prefix: `${config.forwardAuth.path}/`, entry: check });
  }

  const rateLimiter = createConfiguredRateLimiter(config, {
    buckets: (options) => backend.buckets(options),
    countStoreError: () => deps.metrics.countRateLimitStoreError(),
    warnStoreError: (failures, error) =>
      deps.logger.warn(
        { failures, onStoreError: config.rateLimits.onStoreError, cause: describeFailure(error) },
        'rate limit store unavailable',
      ),
    // The value is the operator's or web application's, not a secret: shown to be fixed.
    warnMalformedOverride: ({ key, value }) =>
      deps.logger.warn(
        { redis_key: key, value },
        'rate limit override ignored: not <requests>/<periodSec>[,<burst>] or none',
      ),
  });
  const handler = createRequestHandler({
    routes: createRouteTable({
      exact,
      parameterized: [{ prefix: '/keys/', param: KEY_ID.pattern, entry: keys.item }],
      prefixes,
    }),
    authenticator,
    headerPolicy,
    addressing,
    maxHeaderCount: config.server.maxHeaderCount,
    logger: deps.logger,
    logRequests: config.logging.requests,
    logQuery: config.logging.query,
    metrics: deps.metrics,
    rateLimiter,
    tracing: {
      propagate: config.tracing.propagate,
      sampleRatio: config.tracing.sampleRatio,
      spans: deps.spans,
    },
  });

  return {
    handler,
    rejected: createRejectedRequestLog({
      logger: deps.logger,
      logRequests: config.logging.requests,
      metrics: deps.metrics,
    }),
    basic,
    bearer,
    cacheSettings,
    jwksFetchedAt: () =>
      issuers.flatMap(({ label, source }) => {
        const fetchedAtMs = source.fetchedAtMs?.();
        return fetchedAtMs === undefined ? [] : [{ issuer: label, fetchedAtMs }];
      }),
    async close() {
      // Once more, so that uses since the last batch are not lost on shutdown or reload.
      await lastUse?.close();
      await Promise.all(helpers.map(closeServer));
      for (const forwarder of upstreams.values()) forwarder.close();
    },
  };
}

/** `lockout.enabled: false`: every attempt allowed, nothing counted. */
const OPEN_LOCKOUT: Lockout = {
  begin: () => Promise.resolve({ kind: 'allow', attempt: { settle: () => Promise.resolve([]) } }),
  checkAddress: () => Promise.resolve(undefined),
};

/**
 * The lines fail2ban-style tools match: one `authentication failed` per refused check and
 * one `locked out` per lock started, each with the client address, the network its counters
 * count, and the key or username as sent (at most MAX_KEY_CHARS), never a secret or password.
 */
function lockoutEvents(logger: Logger, metrics: GatewayMetrics): LockoutEvents {
  const who = (target: LockoutTarget) => ({
    client_network: target.network,
    ...(target.kind === 'basic'
      ? { key: target.id.slice(0, MAX_KEY_CHARS) }
      : { username: target.id }),
  });
  return {
    failed(target, reason) {
      metrics.countAuthFailure(target.kind, reason);
      logger.warn(
        { scheme: target.kind, client_address: target.address, ...who(target), reason },
        'authentication failed',
      );
    },
    locked(target, lock) {
      metrics.countLockout(lock.scope);
      logger.warn(
        {
          scheme: target.kind,
          client_address: target.address,
          ...who(target),
          scope: lock.scope,
          lock_sec: lock.lockSec,
          failures: lock.failures,
        },
        'locked out',
      );
    },
    refused(_target, refusal) {
      metrics.countLockoutRefusal(refusal.scope);
    },
    settleFailed(target, error) {
      logger.warn(
        {
          scheme: target.kind,
          client_address: target.address,
          ...who(target),
          cause: describeFailure(error),
        },
        'lockout not updated',
      );
    },
  };
}

/**
 * Counted, and logged when something is wrong: the store lost the fleet key or cannot give it
 * (records skipped, bcrypt decides), a write failed, or records under another fleet key (the
 * gateways on this store do not share one: each overwrites the other's, and pays bcrypt).
 */
function recordEvents(logger: Logger, metrics: GatewayMetrics): RecordEvents {
  // Each kind once a minute at most: a split fleet would say it at every cache miss.
  const warn = throttledWarnings((_kind, reason, suppressed) =>
    logger.warn({ suppressed }, reason),
  );
  const otherKey = warn('other_key');
  const notWritten = warn('write');
  const noFleetKey = warn('fleet_key');
  const why = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  return {
    checked(result) {
      metrics.countVerifiedRecordCheck(result);
      if (result === 'other_key')
        otherKey(
          'verified record made under another fleet key: the gateways on this store do not share one',
        );
    },
    wrote(result, err) {
      metrics.countVerifiedRecordWrite(result);
      if (result === 'failed')
        notWritten(`verified record not written (${why(err)}); written on the next success`);
    },
    fleetKeyUnavailable(err) {
      noFleetKey(`fleet key unavailable (${why(err)}): verified records skipped, bcrypt decides`);
    },
  };
}

/**
 * One line per rehash, naming the key id or username and the cost it had, never the secret:
 * info when it was written or found changed, warn when it failed (retried on the next use).
 */
function reportRehash(logger: Logger, metrics: GatewayMetrics, event: RehashEvent): void {
  const { owner, outcome, from } = event;
  metrics.countBcryptRehash(owner.kind, outcome);
  const fields = {
    ...(owner.kind === 'key' ? { key: owner.key } : { username: owner.username }),
    from_variant: from?.variant,
    from_cost: from?.cost,
    outcome,
  };
  if (outcome === 'failed') {
    logger.warn(
      { ...fields, cause: describeFailure(event.error) },
      'bcrypt hash not rehashed; retried on its next use',
    );
  } else if (outcome === 'written') logger.info(fields, 'bcrypt hash rehashed');
  else logger.info(fields, 'bcrypt hash not rehashed: it changed meanwhile');
}

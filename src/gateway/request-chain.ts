import { createAuthenticator } from '../auth/authenticate.js';
import type { BasicAuthenticator } from '../auth/basic-authenticator.js';
import type { BearerVerifier } from '../auth/jwt/bearer-verifier.js';
import type { BcryptWork } from '../auth/secret-verifier.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { createRejectedRequestLog, type RejectedRequestLog } from '../http/rejected-request.js';
import type { RequestHandler } from '../http/request-handler.js';
import type { JwksKeySetTime } from '../observability/metrics.js';
import type { TokenSigner } from '../tokens/token-signer.js';
import { buildBasicAuth, buildBearerAuth, jwksFetchedAt } from './build-auth.js';
import { buildAddressing, buildHandler } from './build-handler.js';
import { buildLimiter } from './build-limiter.js';
import { buildRoutes } from './build-routes.js';
import { buildUpstreams } from './build-upstreams.js';
import type { ChainDeps } from './chain-deps.js';
import { verifiedCacheSettings, type VerifiedCacheSettings } from './verified-cache-settings.js';

/**
 * What lives for one configuration, from a request's head to its answer: rebuilt on SIGHUP
 * while the listening sockets stay.
 */
export interface RequestChain {
  readonly handler: RequestHandler;
  /** Counts and logs the requests Node's parser refused (see create-server). */
  readonly rejected: RejectedRequestLog;
  readonly basic: BasicAuthenticator;
  readonly bearer: BearerVerifier;
  /** What its verified caches depend on (verifiedCacheSettings), as it was built. */
  readonly cacheSettings: VerifiedCacheSettings;
  /** When the key set in use of each JWKS issuer was fetched (those fetched so far). */
  jwksFetchedAt(): JwksKeySetTime[];
  /** Its bcrypt bound's work now: runs under way and waiting. */
  bcryptWork(): BcryptWork;
  /** Frees the upstream connections and the built-in upstream once requests have drained. */
  close(): Promise<void>;
}

/**
 * The chain of `config`, from the process's `deps` (the same at every build) and the signer
 * of its tokens. `previous`: the chain a reload replaces; its verified caches are kept
 * where the settings they depend on are unchanged.
 */
export async function buildRequestChain(
  config: GatewayConfig,
  deps: ChainDeps,
  signer: TokenSigner,
  previous?: RequestChain,
): Promise<RequestChain> {
  const cacheSettings = verifiedCacheSettings(config);
  const keep = <T>(setting: keyof VerifiedCacheSettings, cache: T | undefined): T | undefined =>
    previous?.cacheSettings[setting] === cacheSettings[setting] ? cache : undefined;
  const auth = buildBasicAuth(config, deps, keep('basic', previous?.basic.verified));
  const { bearer, issuers } = buildBearerAuth(
    config,
    deps,
    signer,
    keep('bearer', previous?.bearer.verified),
  );
  const upstreams = await buildUpstreams(config, deps.metrics);
  const addressing = buildAddressing(config, deps.logger);
  const authenticator = createAuthenticator({
    realm: config.auth.realm,
    basic: auth.basic,
    bearer,
    maxTokenBytes: config.auth.bearer.maxTokenBytes,
  });
  const routes = buildRoutes(config, {
    forwarders: upstreams.forwarders,
    auth,
    authenticator,
    signer,
    store: deps.backend.credentials,
    audit: deps.audit,
    now: deps.now,
  });
  const rateLimiter = buildLimiter(config, deps);
  const handler = buildHandler(config, deps, { routes, authenticator, addressing, rateLimiter });
  return {
    handler,
    rejected: createRejectedRequestLog({
      logger: deps.logger,
      logRequests: config.logging.requests,
      metrics: deps.metrics,
    }),
    basic: auth.basic,
    bearer,
    cacheSettings,
    jwksFetchedAt: () => jwksFetchedAt(issuers),
    bcryptWork: () => auth.verifier.work(),
    async close() {
      // Once more, so that uses since the last batch are not lost on shutdown or reload.
      await auth.lastUse?.close();
      await upstreams.close();
    },
  };
}

import type { Authenticator } from '../auth/authenticate.js';
import type { GatewayConfig } from '../config/config-schema.js';
import type { AuditTrail } from '../credentials/audit-log.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import { createJwksEndpoint } from '../endpoints/jwks-endpoint.js';
import { createKeysEndpoints, type KeysEndpointsOptions } from '../endpoints/keys-endpoints.js';
import { createOpenApiEndpoint } from '../endpoints/openapi-endpoint.js';
import { createTokenEndpoint } from '../endpoints/token-endpoint.js';
import type { ForwardAuthRoute, ProxyRoute, RouteEntry } from '../http/routes.js';
import { KEY_ID } from '../identity/identity-formats.js';
import { openApiJson } from '../openapi/openapi-json.js';
import { toRatePolicy } from '../protection/configured-rate-limiter.js';
import { createPortalEndpoint } from '../portal/portal-endpoint.js';
import { portalPaths } from '../portal/portal-paths.js';
import type { Forwarder } from '../proxy/forwarder.js';
import { OWN_PATHS } from '../routing/own-paths.js';
import { createRouteTable, type RouteTable } from '../routing/route-table.js';
import { GATEWAY_TOKEN_SOURCE, type TokenSigner } from '../tokens/token-signer.js';
import type { BasicAuth } from './build-auth.js';

/** What the routes are made of, beside the configuration. */
export interface RouteParts {
  readonly forwarders: ReadonlyMap<string, Forwarder>;
  readonly auth: BasicAuth;
  readonly authenticator: Authenticator;
  readonly signer: TokenSigner;
  readonly store: CredentialStore;
  readonly audit: AuditTrail;
  readonly now: () => number;
}

type Prefixes = { prefix: string; entry: RouteEntry }[];

/** The configured routes, the gateway's own endpoints, and the forward-auth check when on. */
export function buildRoutes(config: GatewayConfig, parts: RouteParts): RouteTable<RouteEntry> {
  const exact = new Map<string, RouteEntry>();
  const prefixes: Prefixes = [];
  addConfiguredRoutes(config, parts.forwarders, exact, prefixes);
  const keys = addOwnEndpoints(config, parts, exact);
  addForwardAuth(config, exact, prefixes);
  addPortal(config, parts, keys.options, prefixes);
  const { key, keyRoll } = OWN_PATHS;
  return createRouteTable({
    exact,
    parameterized: [
      { prefix: key.path, param: KEY_ID.pattern, entry: keys.item },
      { prefix: keyRoll.path, param: KEY_ID.pattern, suffix: keyRoll.suffix, entry: keys.roll },
    ],
    prefixes,
  });
}

function addConfiguredRoutes(
  config: GatewayConfig,
  forwarders: ReadonlyMap<string, Forwarder>,
  exact: Map<string, RouteEntry>,
  prefixes: Prefixes,
): void {
  for (const route of config.routes) {
    const forwarder = forwarders.get(route.upstream);
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
}

/**
 * The own endpoints at their exact paths (routing/own-paths.ts); returns the entries of the
 * parameterized ones, `/keys/{key}` and `/keys/{key}/roll`, and the options of the keys
 * endpoints (the portal's pages follow the same rules).
 */
function addOwnEndpoints(
  config: GatewayConfig,
  { auth, authenticator, signer, store, audit, now }: RouteParts,
  exact: Map<string, RouteEntry>,
): { item: RouteEntry; roll: RouteEntry; options: KeysEndpointsOptions } {
  const keysOptions: KeysEndpointsOptions = {
    store,
    audit,
    verifier: auth.verifier,
    schemes: ['basic', 'bearer'],
    refuse: authenticator.refuse,
    refuseScope: authenticator.refuseScope,
    maxActivePerSubject: config.keys.maxActivePerSubject,
    requiredScopes: config.keys.requiredScopes,
    maxBodyBytes: config.server.maxBodyBytes,
    gatewayTokenSource: GATEWAY_TOKEN_SOURCE,
    onRevoked: (key) => auth.basic.evictKey(key),
    now,
  };
  const keys = createKeysEndpoints(keysOptions);
  exact.set(OWN_PATHS.keys.path, keys.collection);
  // An exact path wins over `/keys/{key}`: a writer's pair with the id `events` cannot be
  // revoked through DELETE /keys/events (405); `keys revoke events` does it.
  exact.set(OWN_PATHS.keyEvents.path, keys.events);
  exact.set(
    OWN_PATHS.token.path,
    createTokenEndpoint({
      store,
      verifier: auth.verifier,
      signer,
      lockout: auth.lockout,
      lockoutEvents: auth.lockoutEvents,
      refuse: authenticator.refuse,
      maxBodyBytes: config.server.maxBodyBytes,
      rehash: auth.rehash,
    }),
  );
  exact.set(OWN_PATHS.jwks.path, createJwksEndpoint(signer.jwks));
  exact.set(OWN_PATHS.openapi.path, createOpenApiEndpoint(openApiJson()));
  return { item: keys.item, roll: keys.roll, options: keysOptions };
}

/** The portal's pages under `portal.basePath` (every path under it), when on. */
function addPortal(
  config: GatewayConfig,
  { auth, store, now }: RouteParts,
  keys: KeysEndpointsOptions,
  prefixes: Prefixes,
): void {
  const { portal } = config;
  if (!portal.enabled) return;
  const entry = createPortalEndpoint({
    paths: portalPaths(portal.basePath),
    keys,
    login: {
      store,
      verifier: auth.verifier,
      lockout: auth.lockout,
      lockoutEvents: auth.lockoutEvents,
      rehash: auth.rehash,
    },
    lifetimes: {
      idleMs: portal.idleTimeoutSec * 1000,
      absoluteMs: portal.absoluteTimeoutSec * 1000,
    },
    secure: portal.secureCookie === 'always' || config.server.tls !== undefined,
    maxBodyBytes: config.server.maxBodyBytes,
    now,
  });
  prefixes.push({ prefix: portal.basePath, entry });
}

/** The check's path and every path under it (Envoy's shape). */
function addForwardAuth(
  config: GatewayConfig,
  exact: Map<string, RouteEntry>,
  prefixes: Prefixes,
): void {
  if (!config.forwardAuth.enabled) return;
  const check: ForwardAuthRoute = {
    kind: 'forward-auth',
    name: 'forward-auth',
    cacheMaxAgeSec: config.forwardAuth.cacheMaxAgeSec,
  };
  exact.set(config.forwardAuth.path, check);
  prefixes.push({ prefix: `${config.forwardAuth.path}/`, entry: check });
}

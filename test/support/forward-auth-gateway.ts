import bcrypt from 'bcrypt';
import { gatewayYaml } from './gateway-yaml.js';
import { TEST_BCRYPT_COST } from './seed-redis.js';

// The gateway the forward-auth tests ask, on the memory store: loopback is its trusted proxy
// (nginx, Caddy and the tests' own Traefik/Envoy-shaped requests come from 127.0.0.1).

export const SUBJECT = 'subject-forward-auth';
/** Holds `accounts:read`, the listing's scope. */
export const READER = { key: 'ak_fwd_reader', secret: 'reader-secret-0123456789abcdef' };
/** Holds no scope: forbidden on the listing, allowed on the items. */
export const NOBODY = { key: 'ak_fwd_nobody', secret: 'nobody-secret-0123456789abcdef' };
/** Used only for the rate-limited route, one request an hour: a second check is 429. */
export const LIMITED = { key: 'ak_fwd_limited', secret: 'limited-secret-0123456789abcdef' };

/** lockout.basic.keyAddress.threshold of the gateway below. */
export const LOCKOUT_THRESHOLD = 3;

/** forwardAuth.cacheMaxAgeSec of the gateway below. */
export const CACHE_MAX_AGE_SEC = 30;

/** The HS256 secret of the `test` bearer issuer, for tokens the tests sign themselves. */
export const TOKEN_SECRET = 'forward-auth-token-secret-0123456789abcdef';

/**
 * The routes the checks are decided by: the listing (scoped), a prefix route taking writes,
 * a route taking bearer tokens only, and a route limited to one request an hour per
 * credential. `upstreamUrl` is the gateway's own upstream, which a check must never reach.
 */
export async function forwardAuthGatewayYaml(upstreamUrl: string): Promise<string> {
  const hash = (secret: string) => bcrypt.hash(secret, TEST_BCRYPT_COST);
  const route = { upstream: 'accounts', upstreamPath: '/accounts' };
  return gatewayYaml({
    upstreamUrl,
    config: {
      server: { trustedProxies: ['127.0.0.1'] },
      forwardAuth: { enabled: true, cacheMaxAgeSec: CACHE_MAX_AGE_SEC },
      // Locked after LOCKOUT_THRESHOLD wrong secrets for one key from one client address.
      lockout: { basic: { keyAddress: { threshold: LOCKOUT_THRESHOLD } } },
      auth: {
        bearer: { issuers: [{ name: 'test', algorithms: ['HS256'], secret: TOKEN_SECRET }] },
      },
      routes: [
        {
          ...route,
          name: 'accounts',
          paths: ['/accounts', '/accounts/'],
          scopes: ['accounts:read'],
        },
        { ...route, name: 'items', prefixes: ['/items/'], methods: ['GET', 'POST'] },
        { ...route, name: 'tokens', paths: ['/tokens-only'], auth: ['bearer'] },
        {
          ...route,
          name: 'limited',
          paths: ['/limited'],
          rateLimit: { requests: 1, periodSec: 3600 },
        },
      ],
      credentials: {
        seed: {
          keys: [
            {
              ...READER,
              secretHash: await hash(READER.secret),
              subject: SUBJECT,
              scopes: ['accounts:read'],
            },
            { ...NOBODY, secretHash: await hash(NOBODY.secret), subject: SUBJECT },
            { ...LIMITED, secretHash: await hash(LIMITED.secret), subject: SUBJECT },
          ].map(({ secret: _secret, ...seed }) => seed),
        },
      },
      logging: { level: 'info', requests: false },
    },
  });
}

import { readFileSync } from 'node:fs';
import type { GatewayConfig } from '../config/config-schema.js';

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
      // The request chain's build fails on it too; never equal to what was read before.
      return { unreadable: String(error), at: performance.now() };
    }
  });
  return {
    basic: JSON.stringify([config.credentials, config.auth.basic.cache]),
    bearer: JSON.stringify([config.auth.bearer, tokens, keyFiles]),
  };
}

import { DENIED } from '../auth/denial.js';
import { isUsable, type KeyRecord } from '../credentials/credential-store.js';
import { GatewayError, KEY_NOT_FOUND_MESSAGE } from '../errors/gateway-error.js';
import type { Identity } from '../identity/identity.js';
import { hasScopes } from '../identity/scopes.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/**
 * The caller of a keys endpoint, as it may manage pairs now.
 *
 * A token the gateway issued outlives its user by at most its lifetime; for managing
 * pairs it must not: the user must still exist and still own the subject, and only the
 * scopes the user still holds count, for keys.requiredScopes (the route's check, before
 * this, read the token's claims) as for the scopes handed on to a new pair.
 */
export async function callerOf(
  options: KeysEndpointsOptions,
  identity: Identity | undefined,
): Promise<Identity> {
  if (identity === undefined) throw options.refuse(DENIED.missing_credentials, options.schemes);
  let caller = identity;
  if (identity.source === options.gatewayTokenSource && identity.username !== undefined) {
    const user = await options.store.getUser(identity.username);
    // The refused credential is the token: only the Bearer challenge speaks of it.
    if (user?.subject !== identity.subject || user === undefined)
      throw options.refuse(DENIED.invalid_token, ['bearer']);
    caller = { ...identity, scopes: identity.scopes.filter((s) => user.scopes.includes(s)) };
  }
  if (!hasScopes(caller.scopes, options.requiredScopes))
    throw options.refuseScope(caller, options.requiredScopes);
  return caller;
}

/**
 * When a Basic caller's own pair expires (undefined: never, or not a Basic caller), read
 * from the store rather than the cache: the pair must still be usable now.
 */
export async function callerExpiry(
  options: KeysEndpointsOptions,
  caller: Identity,
  nowMs: number,
): Promise<string | undefined> {
  if (caller.method !== 'basic' || caller.key === undefined) return undefined;
  const own = await options.store.getKey(caller.key);
  if (own === undefined || !isUsable(own, nowMs))
    throw options.refuse(DENIED.invalid_credentials, options.schemes);
  return own.expiresAt;
}

/**
 * The pair `key` when it is one of `caller`'s own; 404 `not_found` otherwise, whoever's it is:
 * another subject's pair answers exactly like one that does not exist.
 */
export async function ownPairOf(
  options: Pick<KeysEndpointsOptions, 'store'>,
  caller: Pick<Identity, 'subject'>,
  key: string | undefined,
): Promise<KeyRecord> {
  const pair = key === undefined ? undefined : await options.store.getKey(key);
  if (pair === undefined || pair.subject !== caller.subject)
    throw new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
  return pair;
}

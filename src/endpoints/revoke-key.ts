import { revokedChange, type AuditOrigin } from '../credentials/audit-log.js';
import type { KeyRecord } from '../credentials/credential-store.js';
import { keyView } from '../credentials/key-view.js';
import { GatewayError, KEY_NOT_FOUND_MESSAGE } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import type { EndpointContext } from '../http/routes.js';
import type { Identity } from '../identity/identity.js';
import type { KeyViewBody } from '../openapi/api-schemas.js';
import { requestOrigin } from './audit-origin.js';
import { callerOf, ownPairOf } from './keys-caller.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/**
 * `DELETE /keys/{key}`: revokes one of the caller's own pairs; another subject's answers
 * exactly like one that does not exist.
 */
export async function revokeKey(
  options: KeysEndpointsOptions,
  context: EndpointContext,
): Promise<void> {
  const { res, requestId, identity, param, query } = context;
  const caller = await callerOf(options, identity);
  // Revoking the last active pair would lock the subject out of the API: without
  // `?force=true` the store refuses it (409), atomically with the revocation itself.
  const force = new URLSearchParams(query).get('force') === 'true';
  const origin = requestOrigin(caller, context, 'api');
  const revoked = await revokePairOf(options, caller, param, force, origin);
  writeJson(res, 200, listEnvelope<KeyViewBody>([keyView(revoked, options.now())]), requestId);
}

/**
 * Revokes `key` when it is one of `caller`'s own pairs (404 `not_found` otherwise, whoever's it
 * is), and evicts it from this gateway's cache at once: what `DELETE /keys/{key}` and the
 * portal's revoke both do. Without `force`, the store refuses (409 `conflict`) the subject's
 * last usable pair. The revocation is recorded in the audit trail as `origin` made it.
 */
export async function revokePairOf(
  options: KeysEndpointsOptions,
  caller: Identity,
  key: string | undefined,
  force: boolean,
  origin: AuditOrigin,
): Promise<KeyRecord> {
  const { store } = options;
  const record = await ownPairOf(options, caller, key);
  const revoked = await store.revokeKey(record.key, new Date(options.now()).toISOString(), {
    keepLastActive: !force,
  });
  if (revoked === undefined)
    throw new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
  // Evict here at once; the store's announcement reaches the other gateways.
  options.onRevoked(record.key);
  await options.audit.record(origin, revokedChange(record));
  return revoked;
}

import { rolledChange, type AuditOrigin } from '../credentials/audit-log.js';
import { isUsable, type RolledPair } from '../credentials/credential-store.js';
import {
  DEFAULT_ROLL_OVERLAP_SEC,
  newRoll,
  outlivesCaller,
  ROLL_MESSAGES,
} from '../credentials/key-roll.js';
import { keyView } from '../credentials/key-view.js';
import { GatewayError, KEY_NOT_FOUND_MESSAGE } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import { readJsonBody } from '../http/read-json-body.js';
import type { EndpointContext } from '../http/routes.js';
import type { Identity } from '../identity/identity.js';
import { hasScopes } from '../identity/scopes.js';
import { rollKeySchema, type RolledKeyBody } from '../openapi/api-schemas.js';
import { requestOrigin } from './audit-origin.js';
import { callerExpiry, callerOf, ownPairOf } from './keys-caller.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/**
 * `POST /keys/{key}/roll`: a successor of one of the caller's pairs (its label, scopes and
 * expiry), its secret shown this once, and the rolled pair ending after the overlap asked for
 * (credentials/key-roll.ts). Another subject's pair answers exactly like one that does not
 * exist, as `DELETE /keys/{key}` does.
 */
export async function rollKey(
  options: KeysEndpointsOptions,
  context: EndpointContext,
): Promise<void> {
  const { req, res, requestId, identity, param } = context;
  const caller = await callerOf(options, identity);
  const overlapSec = parseRollBody(await readJsonBody(req, res, options.maxBodyBytes));
  const nowMs = options.now();
  const origin = requestOrigin(caller, context, 'api');
  const { rolled, secret } = await rollPairOf(options, caller, param, overlapSec, nowMs, origin);
  const body = listEnvelope<RolledKeyBody>(
    [{ ...keyView(rolled.successor, nowMs), secret, previous: keyView(rolled.rolled, nowMs) }],
    201,
  );
  writeJson(res, 201, body, requestId, { pragma: 'no-cache' });
}

/**
 * Rolls `key` when it is one of `caller`'s own pairs (404 `not_found` otherwise, whoever's it
 * is): both pairs as the roll leaves them, and the successor's secret. What
 * `POST /keys/{key}/roll` and the portal's roll form both do: 409 for an ended pair, 403 for a
 * pair the caller may not roll, 422 at the cap, this gateway's cache evicted at once, and the
 * roll recorded in the audit trail as `origin` made it.
 */
export async function rollPairOf(
  options: KeysEndpointsOptions,
  caller: Identity,
  key: string | undefined,
  overlapSec: number,
  nowMs: number,
  origin: AuditOrigin,
): Promise<{ readonly rolled: RolledPair; readonly secret: string }> {
  const { store } = options;
  const pair = await ownPairOf(options, caller, key);
  if (!isUsable(pair, nowMs)) throw new GatewayError('conflict', { message: ROLL_MESSAGES.ended });
  // The successor's secret is a new credential with the pair's scopes and life: the caller
  // gets it only where making such a pair would be allowed (create-key.ts), or a leaked
  // pair with fewer scopes, or an expiring one, could roll its way to more.
  if (!hasScopes(caller.scopes, pair.scopes))
    throw new GatewayError('forbidden', { message: ROLL_MESSAGES.scopes });
  if (outlivesCaller(pair.expiresAt, await callerExpiry(options, caller, nowMs)))
    throw new GatewayError('forbidden', { message: ROLL_MESSAGES.outlive });
  // Look before paying for bcrypt (as create-key.ts does); the rolled pair, ending, is not
  // counted. store.rollKey still decides, atomically.
  if ((await store.countActiveKeys(caller.subject)) - 1 >= options.maxActivePerSubject)
    throw new GatewayError('limit_exceeded');
  const { roll, secret } = await newRoll(pair.key, caller.subject, overlapSec, nowMs, (text) =>
    options.verifier.hash(text),
  );
  const rolled = await store.rollKey(roll, options.maxActivePerSubject);
  if (rolled === undefined) throw new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
  // This gateway forgets the pair's cached check at once (its cache entry may end later than
  // the pair now does); the store's announcement reaches the other gateways.
  options.onRevoked(pair.key);
  await options.audit.record(origin, rolledChange(rolled));
  return { rolled, secret };
}

/** The body: `{overlap_sec?}`, or none at all; absent, the default overlap. */
function parseRollBody(body: unknown): number {
  if (body === undefined) return DEFAULT_ROLL_OVERLAP_SEC;
  const parsed = rollKeySchema.safeParse(body);
  if (!parsed.success)
    throw new GatewayError('bad_request', {
      message: parsed.error.issues[0]?.message ?? ROLL_MESSAGES.body,
    });
  return parsed.data.overlap_sec ?? DEFAULT_ROLL_OVERLAP_SEC;
}

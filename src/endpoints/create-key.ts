import { createdChange, type AuditOrigin } from '../credentials/audit-log.js';
import type { KeyRecord } from '../credentials/credential-store.js';
import { generateKeyPair } from '../credentials/generate-key-pair.js';
import { boundByCaller, EXPIRY_MESSAGES, parseExpiryRequest } from '../credentials/key-expiry.js';
import { keyView } from '../credentials/key-view.js';
import {
  CREATE_KEY_MESSAGES,
  GatewayError,
  SCOPE_ESCALATION_MESSAGE,
} from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import { readJsonBody } from '../http/read-json-body.js';
import type { EndpointContext } from '../http/routes.js';
import type { Identity } from '../identity/identity.js';
import { hasScopes } from '../identity/scopes.js';
import { createKeySchema, type CreatedKeyBody } from '../openapi/api-schemas.js';
import { requestOrigin } from './audit-origin.js';
import { callerExpiry, callerOf } from './keys-caller.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/** `POST /keys`: a new pair for the caller's subject, its secret shown this once. */
export async function createKey(
  options: KeysEndpointsOptions,
  context: EndpointContext,
): Promise<void> {
  const { req, res, requestId, identity } = context;
  const caller = await callerOf(options, identity);
  const nowMs = options.now();
  const asked = parseCreateBody(await readJsonBody(req, res, options.maxBodyBytes), nowMs);
  const origin = requestOrigin(caller, context, 'api');
  const { record, secret } = await createPairFor(options, caller, asked, nowMs, origin);
  const created = listEnvelope<CreatedKeyBody>([{ ...keyView(record, nowMs), secret }], 201);
  writeJson(res, 201, created, requestId, { pragma: 'no-cache' });
}

/** A new pair and its secret, the one time the secret exists outside its holder's hands. */
interface CreatedPair {
  readonly record: KeyRecord;
  readonly secret: string;
}

/**
 * Makes the pair `asked` for `caller` (as callerOf returned it), by the rules of `POST /keys`,
 * which the portal's create form follows too: scopes within the caller's own, no life past a
 * Basic caller's pair, the subject's cap. Throws the GatewayError of a refusal. The pair made is
 * recorded in the audit trail as `origin` made it.
 */
export async function createPairFor(
  options: KeysEndpointsOptions,
  caller: Identity,
  asked: CreateRequest,
  nowMs: number,
  origin: AuditOrigin,
): Promise<CreatedPair> {
  const { store } = options;
  const { label, scopes } = asked;
  // No privilege escalation: a pair may carry only scopes its creator holds; without
  // `scopes` it gets all of them.
  const granted = scopes ?? caller.scopes;
  if (!hasScopes(caller.scopes, granted))
    throw new GatewayError('forbidden', { message: SCOPE_ESCALATION_MESSAGE });
  // Nor a longer life: a Basic caller's pair bounds the new one's. Tokens are not bound
  // to their `exp` (a web-app user mints durable pairs with a short-lived token); removing
  // the user with --revoke-keys is their containment.
  const expiry = boundByCaller(asked.expiresAt, await callerExpiry(options, caller, nowMs));
  if (!expiry.ok) throw new GatewayError('bad_request', { message: expiry.message });
  const { expiresAt } = expiry;
  // Look before paying for bcrypt, on the pool every Basic check shares: a subject at its
  // cap must not be able to keep it busy. store.createKey still decides, atomically.
  if ((await store.countActiveKeys(caller.subject)) >= options.maxActivePerSubject)
    throw new GatewayError('limit_exceeded');
  const { key, secret } = generateKeyPair(caller.subject);
  const record: KeyRecord = {
    key,
    subject: caller.subject,
    secretHash: await options.verifier.hash(secret),
    label,
    status: 'active',
    createdAt: new Date(nowMs).toISOString(),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    scopes: granted,
  };
  if (!(await store.createKey(record, options.maxActivePerSubject)))
    throw new GatewayError('limit_exceeded');
  await options.audit.record(origin, createdChange(record));
  return { record, secret };
}

export interface CreateRequest {
  readonly label: string;
  readonly expiresAt: string | undefined;
  /** Undefined: the caller's own. */
  readonly scopes: readonly string[] | undefined;
}

/**
 * `POST /keys` body: `{label?, expires_in? | expires_at?, scopes?}`; absent: all defaults (the
 * portal's create form is read into the same shape and checked here too). The
 * schema checks each field's shape (its issues come in field order, each with its fixed
 * sentence); asking for both expiries is named first, as the expiry's own checks do.
 */
export function parseCreateBody(body: unknown, nowMs: number): CreateRequest {
  if (body === undefined) return { label: '', expiresAt: undefined, scopes: undefined };
  const parsed = createKeySchema.safeParse(body);
  if (!parsed.success) {
    const [first] = parsed.error.issues;
    const field = first?.path[0];
    // An object, then (a refusal of the body itself has no field).
    const fields = body as Record<string, unknown>;
    const both =
      field !== undefined &&
      field !== 'label' &&
      fields.expires_in !== undefined &&
      fields.expires_at !== undefined;
    throw new GatewayError('bad_request', {
      message: both ? EXPIRY_MESSAGES.both : (first?.message ?? CREATE_KEY_MESSAGES.body),
    });
  }
  const asked = parsed.data;
  const expiry = parseExpiryRequest(asked.expires_in, asked.expires_at, nowMs);
  if (!expiry.ok) throw new GatewayError('bad_request', { message: expiry.message });
  return { label: asked.label ?? '', expiresAt: expiry.expiresAt, scopes: asked.scopes };
}

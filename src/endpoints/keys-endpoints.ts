import type { AuthScheme } from '../auth/auth-scheme.js';
import { DENIED } from '../auth/denial.js';
import type { Refuse, RefuseScope } from '../auth/refusal.js';
import type { Identity } from '../identity/identity.js';
import type { SecretVerifier } from '../auth/secret-verifier.js';
import { isUsable, type CredentialStore, type KeyRecord } from '../credentials/credential-store.js';
import { generateKeyPair } from '../credentials/generate-key-pair.js';
import { boundByCaller, EXPIRY_MESSAGES, parseExpiryRequest } from '../credentials/key-expiry.js';
import { keyView } from '../credentials/key-view.js';
import {
  CREATE_KEY_MESSAGES,
  GatewayError,
  KEY_NOT_FOUND_MESSAGE,
  SCOPE_ESCALATION_MESSAGE,
} from '../errors/gateway-error.js';
import { hasScopes } from '../identity/scopes.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import { createKeySchema, type CreatedKeyBody, type KeyViewBody } from '../openapi/api-schemas.js';
import { readJsonBody } from '../http/read-json-body.js';
import { KEYS_PAGE_MESSAGES, parsePageQuery } from './key-page-query.js';
import type { EndpointContext, EndpointRoute } from '../http/routes.js';

export interface KeysEndpointsOptions {
  store: CredentialStore;
  verifier: SecretVerifier;
  schemes: readonly AuthScheme[];
  /** Turns a denial into the route's 401, with its challenges. */
  refuse: Refuse;
  /** The 403 of a caller without keys.requiredScopes (a token's with its challenge). */
  refuseScope: RefuseScope;
  maxActivePerSubject: number;
  /** Scopes every caller of these endpoints needs (keys.requiredScopes). */
  requiredScopes: readonly string[];
  maxBodyBytes: number;
  /** Called once a pair is revoked, to drop it from this gateway's cache without delay. */
  onRevoked: (key: string) => void;
  /** The key source name of tokens the gateway issues (their user must still exist). */
  gatewayTokenSource: string;
  now: () => number;
}

/**
 * Key-pair self-service, always scoped to the caller's subject: `GET /keys`, `POST /keys`,
 * `DELETE /keys/{key}`. Another subject's pair answers exactly like one that does not exist.
 */
export function createKeysEndpoints(options: KeysEndpointsOptions): {
  collection: EndpointRoute;
  item: EndpointRoute;
} {
  const { store } = options;

  // A token the gateway issued outlives its user by at most its lifetime; for managing
  // pairs it must not: the user must still exist and still own the subject, and only the
  // scopes the user still holds count, for keys.requiredScopes (the route's check, before
  // this, read the token's claims) as for the scopes handed on to a new pair.
  const callerOf = async (identity: Identity | undefined): Promise<Identity> => {
    if (identity === undefined) throw options.refuse(DENIED.missing_credentials, options.schemes);
    let caller = identity;
    if (identity.source === options.gatewayTokenSource && identity.username !== undefined) {
      const user = await store.getUser(identity.username);
      // The refused credential is the token: only the Bearer challenge speaks of it.
      if (user?.subject !== identity.subject || user === undefined)
        throw options.refuse(DENIED.invalid_token, ['bearer']);
      caller = { ...identity, scopes: identity.scopes.filter((s) => user.scopes.includes(s)) };
    }
    if (!hasScopes(caller.scopes, options.requiredScopes))
      throw options.refuseScope(caller, options.requiredScopes);
    return caller;
  };

  /**
   * When a Basic caller's own pair expires (undefined: never, or not a Basic caller), read
   * from the store rather than the cache: the pair must still be usable now.
   */
  const callerExpiry = async (caller: Identity, nowMs: number): Promise<string | undefined> => {
    if (caller.method !== 'basic' || caller.key === undefined) return undefined;
    const own = await store.getKey(caller.key);
    if (own === undefined || !isUsable(own, nowMs))
      throw options.refuse(DENIED.invalid_credentials, options.schemes);
    return own.expiresAt;
  };

  const list = async ({ res, requestId, identity, query }: EndpointContext): Promise<void> => {
    const caller = await callerOf(identity);
    const asked = parsePageQuery(query);
    if (!asked.ok) throw new GatewayError('bad_request', { message: asked.message });
    const records = await store.listKeys(caller.subject, asked.page);
    if (records === undefined)
      throw new GatewayError('bad_request', { message: KEYS_PAGE_MESSAGES.lastId });
    const nowMs = options.now();
    const views = records.map((r) => keyView(r, nowMs));
    writeJson(res, 200, listEnvelope<KeyViewBody>(views, 200, asked.page), requestId);
  };

  const create = async ({ req, res, requestId, identity }: EndpointContext): Promise<void> => {
    const caller = await callerOf(identity);
    const nowMs = options.now();
    const asked = parseCreateBody(await readJsonBody(req, res, options.maxBodyBytes), nowMs);
    const { label, scopes } = asked;
    // No privilege escalation: a pair may carry only scopes its creator holds; without
    // `scopes` it gets all of them.
    const granted = scopes ?? caller.scopes;
    if (!hasScopes(caller.scopes, granted))
      throw new GatewayError('forbidden', { message: SCOPE_ESCALATION_MESSAGE });
    // Nor a longer life: a Basic caller's pair bounds the new one's. Tokens are not bound
    // to their `exp` (a web-app user mints durable pairs with a short-lived token); removing
    // the user with --revoke-keys is their containment.
    const expiry = boundByCaller(asked.expiresAt, await callerExpiry(caller, nowMs));
    if (!expiry.ok) throw new GatewayError('bad_request', { message: expiry.message });
    const { expiresAt } = expiry;
    // Look before paying for bcrypt, on the pool every Basic check shares: a subject at its
    // cap must not be able to keep it busy. createKey still decides, atomically.
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
    const created = listEnvelope<CreatedKeyBody>([{ ...keyView(record, nowMs), secret }], 201);
    writeJson(res, 201, created, requestId, { pragma: 'no-cache' });
  };

  const revoke = async ({
    res,
    requestId,
    identity,
    param,
    query,
  }: EndpointContext): Promise<void> => {
    const caller = await callerOf(identity);
    const record = param === undefined ? undefined : await store.getKey(param);
    if (record === undefined || record.subject !== caller.subject)
      throw new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
    // Revoking the last active pair would lock the subject out of the API: without
    // `?force=true` the store refuses it (409), atomically with the revocation itself.
    const force = new URLSearchParams(query).get('force') === 'true';
    const revoked = await store.revokeKey(record.key, new Date(options.now()).toISOString(), {
      keepLastActive: !force,
    });
    if (revoked === undefined)
      throw new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
    // Evict here at once; the store's announcement reaches the other gateways.
    options.onRevoked(record.key);
    writeJson(res, 200, listEnvelope<KeyViewBody>([keyView(revoked, options.now())]), requestId);
  };

  return {
    collection: {
      kind: 'endpoint',
      name: 'keys',
      methods: new Set(['GET', 'HEAD', 'POST']),
      allow: ['GET', 'HEAD', 'POST'],
      schemes: options.schemes,
      scopes: options.requiredScopes,
      handle: (context) => (context.req.method === 'POST' ? create(context) : list(context)),
    },
    item: {
      kind: 'endpoint',
      name: 'key',
      methods: new Set(['DELETE']),
      allow: ['DELETE'],
      schemes: options.schemes,
      scopes: options.requiredScopes,
      handle: revoke,
    },
  };
}

interface CreateRequest {
  readonly label: string;
  readonly expiresAt: string | undefined;
  /** Undefined: the caller's own. */
  readonly scopes: readonly string[] | undefined;
}

/**
 * `POST /keys` body: `{label?, expires_in? | expires_at?, scopes?}`; absent: all defaults. The
 * schema checks each field's shape (its issues come in field order, each with its fixed
 * sentence); asking for both expiries is named first, as the expiry's own checks do.
 */
function parseCreateBody(body: unknown, nowMs: number): CreateRequest {
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

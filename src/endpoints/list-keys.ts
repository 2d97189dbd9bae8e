import { keyView } from '../credentials/key-view.js';
import { GatewayError } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import type { EndpointContext } from '../http/routes.js';
import type { KeyViewBody } from '../openapi/api-schemas.js';
import { KEYS_PAGE_MESSAGES, parsePageQuery } from './key-page-query.js';
import { callerOf } from './keys-caller.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/** `GET /keys`: a page of the caller's own pairs. */
export async function listKeys(
  options: KeysEndpointsOptions,
  { res, requestId, identity, query }: EndpointContext,
): Promise<void> {
  const caller = await callerOf(options, identity);
  const asked = parsePageQuery(query);
  if (!asked.ok) throw new GatewayError('bad_request', { message: asked.message });
  const records = await options.store.listKeys(caller.subject, asked.page);
  if (records === undefined)
    throw new GatewayError('bad_request', { message: KEYS_PAGE_MESSAGES.lastId });
  const nowMs = options.now();
  const views = records.map((r) => keyView(r, nowMs));
  writeJson(res, 200, listEnvelope<KeyViewBody>(views, 200, asked.page), requestId);
}

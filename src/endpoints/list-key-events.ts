import { AUDIT_EVENT_ID, keyEventView } from '../credentials/audit-log.js';
import { GatewayError } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import type { EndpointContext, EndpointRoute } from '../http/routes.js';
import type { KeyEventBody } from '../openapi/api-schemas.js';
import { parsePageQuery, type PageOutcome } from './key-page-query.js';
import { callerOf } from './keys-caller.js';
import type { KeysEndpointsOptions } from './keys-options.js';

/** `GET /keys/events` 400 bad_request: a cursor that is no event id. */
export const EVENTS_PAGE_MESSAGES = {
  lastId: "last_id must be an event id (as the previous page's meta.last_id), given once.",
} as const;

/**
 * The page `GET /keys/events` asks for: `limit` and `order` as `GET /keys` reads them
 * (key-page-query.ts), `last_id` an event id, `<ms>-<sequence>`. Any well-formed id is a place
 * in the log, whether or not its event is still kept: a page after an event trimmed since
 * goes on from where it was. Pure.
 */
export function parseEventPageQuery(query: string): PageOutcome {
  const params = new URLSearchParams(query);
  const lastIds = params.getAll('last_id');
  params.delete('last_id');
  const asked = parsePageQuery(params.toString());
  if (!asked.ok) return asked;
  const [lastId] = lastIds;
  if (lastIds.length > 1 || (lastId !== undefined && !AUDIT_EVENT_ID.test(lastId)))
    return { ok: false, message: EVENTS_PAGE_MESSAGES.lastId };
  return { ok: true, page: { ...asked.page, ...(lastId === undefined ? {} : { after: lastId }) } };
}

/**
 * `GET /keys/events`: a page of the audit trail's events of the caller's own subject (its
 * own log: docs/redis-layout.md), newest first unless `order=asc`; the cursor is the last
 * event's id. Needs keys.requiredScopes, as `GET /keys` does.
 */
export function createKeyEventsEndpoint(options: KeysEndpointsOptions): EndpointRoute {
  return {
    kind: 'endpoint',
    name: 'key-events',
    methods: new Set(['GET', 'HEAD']),
    allow: ['GET', 'HEAD'],
    schemes: options.schemes,
    scopes: options.requiredScopes,
    handle: (context) => listKeyEvents(options, context),
  };
}

async function listKeyEvents(
  options: KeysEndpointsOptions,
  { res, requestId, identity, query }: EndpointContext,
): Promise<void> {
  const caller = await callerOf(options, identity);
  const asked = parseEventPageQuery(query);
  if (!asked.ok) throw new GatewayError('bad_request', { message: asked.message });
  const { limit, order, after } = asked.page;
  const events = await options.audit.log.read({
    subject: caller.subject,
    order,
    count: limit,
    ...(order === 'asc' ? { after } : { before: after }),
  });
  const views = events.map(keyEventView);
  writeJson(res, 200, listEnvelope<KeyEventBody>(views, 200, asked.page), requestId);
}

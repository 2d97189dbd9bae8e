import type { EndpointRoute } from '../http/routes.js';
import { createKey } from './create-key.js';
import type { KeysEndpointsOptions } from './keys-options.js';
import { createKeyEventsEndpoint } from './list-key-events.js';
import { listKeys } from './list-keys.js';
import { revokeKey } from './revoke-key.js';
import { rollKey } from './roll-key.js';

export type { KeysEndpointsOptions } from './keys-options.js';

/**
 * Key-pair self-service, always scoped to the caller's subject: `GET /keys`, `POST /keys`,
 * `DELETE /keys/{key}`, `POST /keys/{key}/roll`, `GET /keys/events`. Another subject's pair
 * answers exactly like one that does not exist.
 */
export function createKeysEndpoints(options: KeysEndpointsOptions): {
  collection: EndpointRoute;
  item: EndpointRoute;
  roll: EndpointRoute;
  events: EndpointRoute;
} {
  return {
    events: createKeyEventsEndpoint(options),
    collection: {
      kind: 'endpoint',
      name: 'keys',
      methods: new Set(['GET', 'HEAD', 'POST']),
      allow: ['GET', 'HEAD', 'POST'],
      schemes: options.schemes,
      scopes: options.requiredScopes,
      handle: (context) =>
        context.req.method === 'POST' ? createKey(options, context) : listKeys(options, context),
    },
    item: {
      kind: 'endpoint',
      name: 'key',
      methods: new Set(['DELETE']),
      allow: ['DELETE'],
      schemes: options.schemes,
      scopes: options.requiredScopes,
      handle: (context) => revokeKey(options, context),
    },
    roll: {
      kind: 'endpoint',
      name: 'key-roll',
      methods: new Set(['POST']),
      allow: ['POST'],
      schemes: options.schemes,
      scopes: options.requiredScopes,
      handle: (context) => rollKey(options, context),
    },
  };
}

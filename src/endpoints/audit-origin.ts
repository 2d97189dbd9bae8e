import { actorOf, type AuditOrigin } from '../credentials/audit-log.js';
import type { EndpointContext } from '../http/routes.js';
import type { Identity } from '../identity/identity.js';

/**
 * Who makes a change through `via` (the API, or the portal's pages), and from where: the
 * caller, the client's address and the request's id (its access line carries the same).
 */
export function requestOrigin(
  caller: Identity,
  context: Pick<EndpointContext, 'client' | 'requestId'>,
  via: 'api' | 'portal',
): AuditOrigin {
  return {
    actor: actorOf(caller),
    via,
    from: context.client.clientAddress().address,
    requestId: context.requestId,
  };
}

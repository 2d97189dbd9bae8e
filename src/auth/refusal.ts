import { GatewayError } from '../errors/gateway-error.js';
import type { Identity } from '../identity/identity.js';
import type { AuthScheme } from './auth-scheme.js';
import type { Denial } from './denial.js';

/** Turns a denial into the error the client gets, with the challenges of the route's schemes. */
export type Refuse = (denial: Denial, schemes: readonly AuthScheme[]) => GatewayError;

/** The 403 of an authenticated caller that lacks some of the `required` scopes. */
export type RefuseScope = (caller: Identity, required: readonly string[]) => GatewayError;

/**
 * The one place a denial becomes a response: a 400 for an undecodable header, otherwise
 * a 401 whose `WWW-Authenticate` offers every scheme the route accepts (RFC 9110
 * §15.5.2: every 401 carries one). RFC 7617 §2.1: the Basic charset parameter tells
 * clients to send UTF-8. RFC 6750 §3: once a token was presented and refused, the Bearer
 * challenge says why.
 */
export function createRefusal(realm: string): Refuse {
  const basic = `Basic realm="${realm}", charset="UTF-8"`;
  const bearer = `Bearer realm="${realm}"`;
  const bearerRejected = `Bearer realm="${realm}", error="invalid_token"`;
  return (denial, schemes) => {
    const reason = denial.denied;
    if (reason === 'malformed_authorization')
      return new GatewayError(reason, { cause: denial.cause });
    const tokenRejected = reason === 'invalid_token' || reason === 'token_expired';
    const challenges = schemes.map((scheme) =>
      scheme === 'basic' ? basic : tokenRejected ? bearerRejected : bearer,
    );
    return new GatewayError(reason, { cause: denial.cause, challenges });
  };
}

/**
 * RFC 6750 §3.1: a token without the scope a resource requires is a 403 whose Bearer
 * challenge says `insufficient_scope` and names the scopes needed (space-delimited, §3), so
 * that a client can ask its authorization server for a token that has them. A Basic pair
 * has no such channel (RFC 7617 defines no error): its 403 carries no challenge. Scopes are
 * scope tokens (config and stores allow no quote or backslash), so the quoted string needs
 * no escaping.
 */
export function createScopeRefusal(realm: string): RefuseScope {
  return (caller, required) =>
    caller.method === 'bearer'
      ? new GatewayError('forbidden', {
          challenges: [
            `Bearer realm="${realm}", error="insufficient_scope", scope="${required.join(' ')}"`,
          ],
        })
      : new GatewayError('forbidden');
}

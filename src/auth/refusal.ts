import { GatewayError } from '../errors/gateway-error.js';
import type { AuthScheme } from './auth-scheme.js';
import type { Denial } from './denial.js';

/** Turns a denial into the error the client gets, with the challenges of the route's schemes. */
export type Refuse = (denial: Denial, schemes: readonly AuthScheme[]) => GatewayError;

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

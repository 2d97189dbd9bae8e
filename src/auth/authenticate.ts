import type { AuthScheme } from './auth-scheme.js';
import type { ClientAddressSource } from '../identity/client-address.js';
import type { BasicAuthenticator } from './basic-authenticator.js';
import { DENIED, type AuthOutcome } from './denial.js';
import type { BearerVerifier } from './jwt/bearer-verifier.js';
import { basicCredentials, bearerToken, parseAuthorization } from './parse-authorization.js';
import { createRefusal, createScopeRefusal, type Refuse, type RefuseScope } from './refusal.js';

export interface Authenticator {
  /**
   * The identity behind an Authorization header, or a denial saying why not. Rejects only
   * when a dependency cannot answer (503). A cache hit returns synchronously: the hot path
   * pays for no promise, no Redis and no bcrypt. `from` is asked for the client address
   * only by a check that consults the lockout (never on a cache hit). `connection` (the
   * client's socket) lets the Basic cache remember a connection's repeated credentials.
   */
  authenticate(
    header: string | undefined,
    schemes: readonly AuthScheme[],
    from?: ClientAddressSource,
    connection?: object,
  ): AuthOutcome | Promise<AuthOutcome>;
  /** The error a denial answers with on a route accepting `schemes`. */
  readonly refuse: Refuse;
  /** The 403 of a caller lacking a required scope (with the RFC 6750 challenge for a token). */
  readonly refuseScope: RefuseScope;
}

export interface AuthenticatorOptions {
  realm: string;
  basic: BasicAuthenticator;
  bearer: BearerVerifier;
  maxTokenBytes: number;
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { basic, bearer } = options;
  return {
    refuse: createRefusal(options.realm),
    refuseScope: createScopeRefusal(options.realm),
    authenticate(header, schemes, from, connection) {
      // Cache hits first, looked up by the credentials exactly as sent: only a verified pair
      // or token is ever cached, so a hit needs no decoding and no syntax scan.
      const encoded = header === undefined ? undefined : basicCredentials(header);
      if (encoded !== undefined) {
        const hit = schemes.includes('basic') ? basic.cached(encoded, connection) : undefined;
        if (hit !== undefined) return hit;
      } else if (header !== undefined && schemes.includes('bearer')) {
        const token = bearerToken(header);
        const hit = token === undefined ? undefined : bearer.cached(token);
        if (hit !== undefined) return hit;
      }
      const parsed = parseAuthorization(header, options.maxTokenBytes);
      switch (parsed.scheme) {
        case 'malformed_basic':
          return DENIED.malformed_authorization;
        case 'basic':
          if (!schemes.includes('basic')) return DENIED.missing_credentials;
          return basic.verify(parsed.key, parsed.secret, encoded, from);
        case 'malformed_bearer':
          return schemes.includes('bearer') ? DENIED.invalid_token : DENIED.missing_credentials;
        case 'bearer': {
          if (!schemes.includes('bearer')) return DENIED.missing_credentials;
          return bearer.verify(parsed.token);
        }
        case 'none':
        case 'unsupported':
          return DENIED.missing_credentials;
      }
    },
  };
}

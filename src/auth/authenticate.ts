import { GatewayError } from '../errors/gateway-error.js';
import type { BasicAuthenticator } from './basic-authenticator.js';
import type { Identity } from '../identity/identity.js';
import type { BearerVerifier } from './jwt/bearer-verifier.js';
import { basicCredentials, parseAuthorization } from './parse-authorization.js';

export type AuthScheme = 'basic' | 'bearer';

export interface Authenticator {
  /**
   * The identity behind an Authorization header, or a GatewayError thrown (or rejected)
   * for a denial or a failure. A cache hit returns synchronously: the hot path pays for no
   * promise, no Redis and no bcrypt.
   */
  authenticate(
    header: string | undefined,
    schemes: readonly AuthScheme[],
  ): Identity | Promise<Identity>;
}

export interface AuthenticatorOptions {
  realm: string;
  basic: BasicAuthenticator;
  bearer: BearerVerifier;
  maxTokenBytes: number;
}

/** RFC 6750 §3: once a token was presented and refused, the challenge says why. */
export function bearerChallenge(realm: string, tokenRejected: boolean): string {
  return tokenRejected
    ? `Bearer realm="${realm}", error="invalid_token"`
    : `Bearer realm="${realm}"`;
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { basic, bearer, realm } = options;
  // RFC 7617 §2.1: the charset parameter tells clients to send UTF-8.
  const basicChallenge = `Basic realm="${realm}", charset="UTF-8"`;
  const bearerChallengeText = bearerChallenge(realm, false);
  const bearerRejected = bearerChallenge(realm, true);

  const challenges = (schemes: readonly AuthScheme[], tokenRejected: boolean): string[] =>
    schemes.map((s) =>
      s === 'basic' ? basicChallenge : tokenRejected ? bearerRejected : bearerChallengeText,
    );

  const deny = (
    code: 'missing_credentials' | 'invalid_credentials',
    schemes: readonly AuthScheme[],
  ): GatewayError => new GatewayError(code, { challenges: challenges(schemes, false) });

  const withChallenge = (error: unknown, schemes: readonly AuthScheme[]): never => {
    if (error instanceof GatewayError && error.status === 401) {
      throw new GatewayError(error.code, {
        cause: error.cause,
        challenges: challenges(schemes, true),
      });
    }
    throw error;
  };

  return {
    authenticate(header, schemes) {
      const encoded = header === undefined ? undefined : basicCredentials(header);
      if (encoded !== undefined && schemes.includes('basic')) {
        const hit = basic.cached(encoded);
        if (hit !== undefined) return hit;
      }
      const parsed = parseAuthorization(header, options.maxTokenBytes);
      switch (parsed.scheme) {
        case 'malformed_basic':
          throw new GatewayError('malformed_authorization');
        case 'basic': {
          if (!schemes.includes('basic')) throw deny('missing_credentials', schemes);
          return basic.verify(parsed.key, parsed.secret, encoded).then((identity) => {
            if (identity === null) throw deny('invalid_credentials', schemes);
            return identity;
          });
        }
        case 'malformed_bearer':
          if (!schemes.includes('bearer')) throw deny('missing_credentials', schemes);
          return withChallenge(new GatewayError('invalid_token'), schemes);
        case 'bearer': {
          if (!schemes.includes('bearer')) throw deny('missing_credentials', schemes);
          const hit = bearer.cached(parsed.token);
          if (hit !== undefined) return hit;
          return bearer
            .verify(parsed.token)
            .catch((error: unknown) => withChallenge(error, schemes));
        }
        case 'none':
        case 'unsupported':
          throw deny('missing_credentials', schemes);
      }
    },
  };
}

import { DENIED } from '../auth/denial.js';
import type { Refuse } from '../auth/refusal.js';
import { GatewayError } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import { expectsContinue } from '../http/expects-continue.js';
import { readJsonBody } from '../http/read-json-body.js';
import type { EndpointContext, EndpointRoute } from '../http/routes.js';
import { LOGIN_MESSAGES, type TokenBody } from '../openapi/api-schemas.js';
import type { TokenSigner } from '../tokens/token-signer.js';
import { checkLogin, parseLogin, type LoginCheckOptions } from './check-login.js';

export interface TokenEndpointOptions extends LoginCheckOptions {
  signer: TokenSigner;
  maxBodyBytes: number;
  /** Turns the refused password into the 401 with its challenge. */
  refuse: Refuse;
}

/**
 * `POST /auth/token` {"username","password"} -> a short-lived Bearer JWT (spec §5.2). The
 * web-app password is checked like a secret (check-login.ts, shared with the portal's
 * sign-in): neither body nor timing tells an unknown user from a wrong password.
 */
export function createTokenEndpoint(options: TokenEndpointOptions): EndpointRoute {
  const handle = async ({ req, res, requestId, client }: EndpointContext): Promise<void> => {
    // The request handler's, as for Basic checks and the address rate limit: one reading of
    // X-Forwarded-For, one network counted.
    const from = client.clientAddress();
    // Before the body is read, and so before any `100 Continue` (RFC 9110 §10.1.1): a client
    // already refused should not be invited to upload. Only then: it costs a round trip.
    if (expectsContinue(req.headers)) {
      const early = await options.lockout.checkAddress('token', from.network);
      if (early !== undefined)
        throw new GatewayError('rate_limited', { retryAfterSec: early.retryAfterSec });
    }
    const login = parseLogin(
      await readJsonBody(req, res, options.maxBodyBytes, LOGIN_MESSAGES.body),
    );
    // Locked out: 429 before the user is read or bcrypt runs, whatever the password.
    const user = await checkLogin(options, login, from);
    if (user === undefined) {
      // RFC 9110 §15.5.2: every 401 carries a challenge. The Bearer one, since a token is
      // what this endpoint issues; a Basic one would make browsers prompt for a password.
      throw options.refuse(DENIED.invalid_credentials, ['bearer']);
    }
    const token = await options.signer.issue(
      user.subject,
      user.username,
      user.scopes,
      user.tokenGeneration,
    );
    const body = listEnvelope<TokenBody>([
      {
        access_token: token.accessToken,
        token_type: 'Bearer',
        expires_in: token.expiresIn,
        expires_at: token.expiresAt,
      },
    ]);
    writeJson(res, 200, body, requestId, { pragma: 'no-cache' });
  };
  return {
    kind: 'endpoint',
    name: 'token',
    methods: new Set(['POST']),
    allow: ['POST'],
    schemes: null,
    scopes: [],
    handle,
  };
}

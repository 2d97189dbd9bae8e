import { guardAttempt, type LockoutEvents } from '../protection/guard-attempt.js';
import type { Lockout } from '../protection/lockout.js';
import { DENIED } from '../auth/denial.js';
import type { Refuse } from '../auth/refusal.js';
import type { RehashOnUse } from '../auth/rehash-on-use.js';
import type { SecretVerifier } from '../auth/secret-verifier.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import { MAX_SECRET_BYTES } from '../credentials/secret-hasher.js';
import { GatewayError } from '../errors/gateway-error.js';
import { listEnvelope, writeJson } from '../http/json-response.js';
import { expectsContinue } from '../http/expects-continue.js';
import { readJsonBody } from '../http/read-json-body.js';
import type { EndpointContext, EndpointRoute } from '../http/routes.js';
import { LOGIN_MESSAGES, loginSchema, type Login, type TokenBody } from '../openapi/api-schemas.js';
import type { TokenSigner } from '../tokens/token-signer.js';

export interface TokenEndpointOptions {
  store: CredentialStore;
  verifier: SecretVerifier;
  signer: TokenSigner;
  /** Failed attempts per (username, address), per address and per username. */
  lockout: Lockout;
  lockoutEvents: LockoutEvents;
  maxBodyBytes: number;
  /** Turns the refused password into the 401 with its challenge. */
  refuse: Refuse;
  /** Brings a verified password's hash to the configured cost; absent: hashes stay as stored. */
  rehash?: RehashOnUse;
}

/**
 * `POST /auth/token` {"username","password"} -> a short-lived Bearer JWT (spec §5.2). The
 * web-app password is checked like a secret: bcrypt against the stored hash, or against
 * the dummy hash when the user does not exist, so neither body nor timing tells them apart.
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
    const { username, password } = parseLogin(
      await readJsonBody(req, res, options.maxBodyBytes, LOGIN_MESSAGES.body),
    );
    // Locked out: 429 before the user is read or bcrypt runs, whatever the password.
    const user = await guardAttempt(
      options.lockout,
      options.lockoutEvents,
      { kind: 'token', id: username, ...from },
      async () => {
        const found = await options.store.getUser(username);
        // bcrypt reads 72 bytes: a longer password could match a different one; refuse it.
        if (Buffer.byteLength(password) > MAX_SECRET_BYTES) return 'unusable_credentials';
        const matches = await options.verifier.verify(password, found?.passwordHash);
        return matches && found !== undefined ? found : 'invalid_credentials';
      },
      (found) => (typeof found === 'string' ? found : 'success'),
    );
    if (typeof user === 'string') {
      // RFC 9110 §15.5.2: every 401 carries a challenge. The Bearer one, since a token is
      // what this endpoint issues; a Basic one would make browsers prompt for a password.
      throw options.refuse(DENIED.invalid_credentials, ['bearer']);
    }
    options.rehash?.afterSuccess({ kind: 'user', username }, password, user.passwordHash);
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

/**
 * The login the body holds, or 400 naming the first field missing or wrong: the schema's
 * issues come in field order, each with its fixed sentence.
 */
function parseLogin(body: unknown): Login {
  const parsed = loginSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new GatewayError('bad_request', {
    message: parsed.error.issues[0]?.message ?? LOGIN_MESSAGES.body,
  });
}

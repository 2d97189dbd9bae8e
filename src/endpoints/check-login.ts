import type { RehashOnUse } from '../auth/rehash-on-use.js';
import type { SecretVerifier } from '../auth/secret-verifier.js';
import type { CredentialStore, UserRecord } from '../credentials/credential-store.js';
import { MAX_SECRET_BYTES } from '../credentials/secret-hasher.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ClientAddress } from '../identity/client-address.js';
import { LOGIN_MESSAGES, loginSchema, type Login } from '../openapi/api-schemas.js';
import { guardAttempt, type LockoutEvents } from '../protection/guard-attempt.js';
import type { Lockout } from '../protection/lockout.js';

export interface LoginCheckOptions {
  store: CredentialStore;
  verifier: SecretVerifier;
  /** Failed attempts per (username, address), per address and per username. */
  lockout: Lockout;
  lockoutEvents: LockoutEvents;
  /** Brings a verified password's hash to the configured cost; absent: hashes stay as stored. */
  rehash?: RehashOnUse | undefined;
}

/**
 * A web-app user's username and password, checked the one way `POST /auth/token` and the
 * portal's sign-in share: under the lockout (the `token` counters: attempts at either count
 * together), a locked-out client refused with 429 `rate_limited` before the user is read or
 * bcrypt runs; the password compared with bcrypt against the stored hash, or against the
 * dummy hash when the user does not exist, so that neither the answer nor its time tells an
 * unknown user from a wrong password. The user when the password is right; undefined otherwise.
 */
export async function checkLogin(
  options: LoginCheckOptions,
  { username, password }: Login,
  from: ClientAddress,
): Promise<UserRecord | undefined> {
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
  if (typeof user === 'string') return undefined;
  options.rehash?.afterSuccess({ kind: 'user', username }, password, user.passwordHash);
  return user;
}

/**
 * The login a body holds, or 400 naming the first field missing or wrong: the schema's
 * issues come in field order, each with its fixed sentence.
 */
export function parseLogin(body: unknown): Login {
  const parsed = loginSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new GatewayError('bad_request', {
    message: parsed.error.issues[0]?.message ?? LOGIN_MESSAGES.body,
  });
}

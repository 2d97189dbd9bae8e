import type { JWTPayload } from 'jose';
import type { CredentialStore } from '../../credentials/credential-store.js';

/** Whether a verified token's user still holds it; rejects (503) when the store cannot answer. */
export type TokenUserCheck = (payload: JWTPayload) => Promise<boolean>;

/**
 * The check of a token the gateway issued (the password exchange): its user must still exist,
 * own the token's subject, and be at the token generation the token was issued at — so a
 * token stops working when its user is removed or its password changes (`users remove`,
 * `users passwd`, or a writer bumping `token_generation`), not only at `exp`. One store read
 * per token; the Bearer verifier caches its answer with the token, and the store's
 * `subject:` announcement of a removal or a password change evicts it.
 */
export function createTokenUserCheck(
  store: Pick<CredentialStore, 'getUser'>,
  generationClaim: string,
): TokenUserCheck {
  return async (payload) => {
    const username = payload.preferred_username;
    if (typeof username !== 'string') return false;
    const user = await store.getUser(username);
    if (user === undefined || user.subject !== payload.sub) return false;
    const claimed = payload[generationClaim] ?? 0;
    return claimed === (user.tokenGeneration ?? 0);
  };
}

import type { Identity } from '../identity/identity.js';

/** Why presented credentials were refused: each is also the error code the client sees. */
export type DenialReason =
  | 'malformed_authorization'
  | 'missing_credentials'
  | 'invalid_credentials'
  | 'invalid_token'
  | 'token_expired';

/**
 * A refusal of the credentials presented: a normal answer of a verifier, never an
 * exception. Only a dependency that cannot answer (store, JWKS, bcrypt pool) throws.
 */
export interface Denial {
  readonly denied: DenialReason;
  /** What the verifier saw (a jose error), for the logs only. */
  readonly cause?: unknown;
}

export type AuthOutcome = Identity | Denial;

export function isDenial(outcome: AuthOutcome): outcome is Denial {
  return (outcome as Partial<Denial>).denied !== undefined;
}

/** One frozen value per reason: the common denials allocate nothing. */
export const DENIED: { readonly [R in DenialReason]: Denial } = {
  malformed_authorization: Object.freeze({ denied: 'malformed_authorization' }),
  missing_credentials: Object.freeze({ denied: 'missing_credentials' }),
  invalid_credentials: Object.freeze({ denied: 'invalid_credentials' }),
  invalid_token: Object.freeze({ denied: 'invalid_token' }),
  token_expired: Object.freeze({ denied: 'token_expired' }),
};

const REASONS: ReadonlySet<string> = new Set(Object.keys(DENIED));

/** Whether an error code reports refused credentials: each denial's reason is its code. */
export function isDenialReason(code: string): code is DenialReason {
  return REASONS.has(code);
}

export function deny(reason: DenialReason, cause?: unknown): Denial {
  return cause === undefined ? DENIED[reason] : { denied: reason, cause };
}

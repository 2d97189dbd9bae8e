import type { AuthScheme } from '../auth/auth-scheme.js';
import type { Refuse, RefuseScope } from '../auth/refusal.js';
import type { SecretVerifier } from '../auth/secret-verifier.js';
import type { AuditTrail } from '../credentials/audit-log.js';
import type { CredentialStore } from '../credentials/credential-store.js';

export interface KeysEndpointsOptions {
  store: CredentialStore;
  /** Where each change (create, roll, revoke) is recorded, with who made it and from where. */
  audit: AuditTrail;
  verifier: SecretVerifier;
  schemes: readonly AuthScheme[];
  /** Turns a denial into the route's 401, with its challenges. */
  refuse: Refuse;
  /** The 403 of a caller without keys.requiredScopes (a token's with its challenge). */
  refuseScope: RefuseScope;
  maxActivePerSubject: number;
  /** Scopes every caller of these endpoints needs (keys.requiredScopes). */
  requiredScopes: readonly string[];
  maxBodyBytes: number;
  /** Called once a pair is revoked, to drop it from this gateway's cache without delay. */
  onRevoked: (key: string) => void;
  /** The key source name of tokens the gateway issues (their user must still exist). */
  gatewayTokenSource: string;
  now: () => number;
}

import type { KeysEndpointsOptions } from '../endpoints/keys-options.js';
import type { LoginCheckOptions } from '../endpoints/check-login.js';
import type { PortalPaths } from './portal-paths.js';
import type { SessionLifetimes } from './session-lifetimes.js';

export interface PortalOptions {
  readonly paths: PortalPaths;
  /** The rules and store of `/keys`, which the pages' list, create and revoke share. */
  readonly keys: KeysEndpointsOptions;
  /** The password check of `POST /auth/token`, with its lockout. */
  readonly login: LoginCheckOptions;
  readonly lifetimes: SessionLifetimes;
  /**
   * The session cookie is `Secure` (and `__Host-`): the API port speaks TLS, or a proxy in
   * front does (`portal.secureCookie: always`). Origins must then be https ones too.
   */
  readonly secure: boolean;
  readonly maxBodyBytes: number;
  readonly now: () => number;
}

/** Pairs on one page of the list. */
export const PAIRS_PER_PAGE = 20;

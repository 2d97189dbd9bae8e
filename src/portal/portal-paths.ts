import { KEY_ID } from '../identity/identity-formats.js';

/**
 * The portal's pages under its base path (`portal.basePath`, ending in `/`), and which one a
 * request's path after the base names. Stable paths, ids and field names: the browser tests
 * drive the pages by them.
 */
export interface PortalPaths {
  readonly home: string;
  readonly signIn: string;
  readonly signOut: string;
  readonly newPair: string;
  /** Where the create form posts. */
  readonly pairs: string;
  readonly revoke: (key: string) => string;
  /** The roll page (GET) and where its form posts (POST). */
  readonly roll: (key: string) => string;
  readonly style: string;
  readonly script: string;
}

export function portalPaths(base: string): PortalPaths {
  return {
    home: base,
    signIn: `${base}sign-in`,
    signOut: `${base}sign-out`,
    newPair: `${base}keys/new`,
    pairs: `${base}keys`,
    revoke: (key) => `${base}keys/${key}/revoke`,
    roll: (key) => `${base}keys/${key}/roll`,
    style: `${base}portal.css`,
    script: `${base}portal.js`,
  };
}

/** A page of the portal, as the rest of a path after the base names it. */
export type PortalPage =
  | { readonly page: 'home' | 'sign-in' | 'sign-out' | 'new-pair' | 'pairs' | 'style' | 'script' }
  | { readonly page: 'revoke' | 'roll'; readonly key: string };

type FixedPage = Exclude<PortalPage['page'], 'revoke' | 'roll'>;

// A Map, not an object literal: `constructor` or `__proto__` must name no page.
const FIXED: ReadonlyMap<string, FixedPage> = new Map([
  ['', 'home'],
  ['sign-in', 'sign-in'],
  ['sign-out', 'sign-out'],
  ['keys/new', 'new-pair'],
  ['keys', 'pairs'],
  ['portal.css', 'style'],
  ['portal.js', 'script'],
]);

/** The page `rest` names; undefined for none (404). Pure. */
export function pageOf(rest: string): PortalPage | undefined {
  const fixed = FIXED.get(rest);
  if (fixed !== undefined) return { page: fixed };
  const action = /^keys\/([^/]+)\/(revoke|roll)$/.exec(rest);
  const key = action?.[1];
  const page = action?.[2] === 'roll' ? 'roll' : 'revoke';
  if (key !== undefined && KEY_ID.pattern.test(key)) return { page, key };
  return undefined;
}

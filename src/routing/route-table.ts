import { checkRequestTarget } from './check-request-target.js';

/**
 * What a raw request target resolves to. Paths are compared exactly, byte for byte:
 * `/accounts` and `/Accounts` or `/accounts//` are different paths, and only the
 * configured spellings match.
 */
export type TargetMatch<T> =
  | {
      readonly kind: 'match';
      readonly entry: T;
      readonly param: string | undefined;
      readonly query: string;
    }
  | { readonly kind: 'invalid_path' }
  | { readonly kind: 'not_found' };

export interface RouteTable<T> {
  match(target: string): TargetMatch<T>;
}

export interface RouteTableEntries<T> {
  /** Exact paths. */
  readonly exact: ReadonlyMap<string, T>;
  /** `prefix` + one segment matching `param` (e.g. `/keys/` + a key id). */
  readonly parameterized?: readonly { prefix: string; param: RegExp; entry: T }[];
  /**
   * Path prefixes, each ending in `/`, matching any rest (returned as `param`). Exact and
   * parameterized entries win; among prefixes, the longest.
   */
  readonly prefixes?: readonly { prefix: string; entry: T }[];
}

export function createRouteTable<T>(entries: RouteTableEntries<T>): RouteTable<T> {
  const exact = new Map(entries.exact);
  const parameterized = entries.parameterized ?? [];
  const prefixes = [...(entries.prefixes ?? [])].sort((a, b) => b.prefix.length - a.prefix.length);
  return {
    match(target) {
      if (target.charCodeAt(0) === 0x2f /* / */) return matchOriginForm(target);
      // RFC 9112 §3.2.2: a server must accept absolute-form; it is routed by its path and
      // query like origin-form (the authority picks nothing: the upstream is the route's).
      // `*` (asterisk-form, for OPTIONS) names no resource here: not found, not a bad path.
      if (target === '*') return NOT_FOUND;
      const origin = originFormOf(target);
      return origin === undefined ? INVALID : matchOriginForm(origin);
    },
  };

  function matchOriginForm(target: string): TargetMatch<T> {
    const q = target.indexOf('?');
    const rawPath = q === -1 ? target : target.slice(0, q);
    // Fast path: a configured path is clean by construction, so only the query needs a look.
    const hit = exact.get(rawPath);
    if (hit !== undefined) {
      if (q !== -1 && target.includes('#', q)) return INVALID;
      return {
        kind: 'match',
        entry: hit,
        param: undefined,
        query: q === -1 ? '' : target.slice(q),
      };
    }
    const checked = checkRequestTarget(target);
    if (checked === undefined) return INVALID;
    for (const { prefix, param, entry } of parameterized) {
      if (checked.path.startsWith(prefix)) {
        const rest = checked.path.slice(prefix.length);
        if (param.test(rest)) return { kind: 'match', entry, param: rest, query: checked.query };
      }
    }
    // The rest has passed every rule of checkRequestTarget above (no dot segment, no encoded
    // `/` or `\`, ...), and the prefix ends in `/`: the rest's segments are whole segments
    // that the upstream cannot resolve to a path outside the prefix (RFC 3986 §5.2.4).
    for (const { prefix, entry } of prefixes) {
      if (checked.path.startsWith(prefix))
        return {
          kind: 'match',
          entry,
          param: checked.path.slice(prefix.length),
          query: checked.query,
        };
    }
    return NOT_FOUND;
  }
}

const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The path and query of an absolute-form target (`http://host/accounts?x=1` ->
 * `/accounts?x=1`, `http://host?x` -> `/?x`); undefined for any other form that does not
 * start with `/` (authority-form, a relative path, another scheme).
 */
export function originFormOf(target: string): string | undefined {
  if (target.charCodeAt(0) === 0x2f /* / */) return target;
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return undefined;
  const rest = target.slice(authority[0].length);
  return rest.charCodeAt(0) === 0x2f ? rest : `/${rest}`;
}

const INVALID = { kind: 'invalid_path' } as const;
const NOT_FOUND = { kind: 'not_found' } as const;

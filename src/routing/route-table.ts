import { checkRequestTarget } from './check-request-target.js';
import { foldPath } from './fold-path.js';

/**
 * What a raw request target resolves to. Paths are compared exactly, byte for byte:
 * `/accounts` and `/Accounts` or `/accounts//` are different paths, and only the
 * configured spellings match; a spelling an upstream may serve as a path another route
 * decides (in another case, with a format suffix) is refused.
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
  /**
   * `prefix` + one segment matching `param` (e.g. `/keys/` + a key id), + `suffix` when
   * given (`/roll`): the segment is what lies between.
   */
  readonly parameterized?: readonly {
    prefix: string;
    param: RegExp;
    suffix?: string;
    entry: T;
  }[];
  /**
   * Path prefixes, each ending in `/`, matching any rest (returned as `param`). Exact and
   * parameterized entries win; among prefixes, the longest.
   */
  readonly prefixes?: readonly { prefix: string; entry: T }[];
}

export function createRouteTable<T>(entries: RouteTableEntries<T>): RouteTable<T> {
  const resolve = createResolver(entries);
  // The same table as a case-insensitive upstream reads it (Express, ASP.NET Core, IIS).
  const resolveFolded = createResolver({
    exact: new Map([...entries.exact].map(([path, entry]) => [foldPath(path), entry])),
    parameterized: (entries.parameterized ?? []).map((p) => ({
      ...p,
      prefix: foldPath(p.prefix),
      ...(p.suffix === undefined ? {} : { suffix: foldPath(p.suffix) }),
    })),
    prefixes: (entries.prefixes ?? []).map((p) => ({ ...p, prefix: foldPath(p.prefix) })),
  });
  // The match of each exact path without a query, made once: the listing paths are most
  // requests, and their answer is then one Map lookup and no allocation.
  const exact = new Map(
    [...entries.exact].map(([path, entry]) => [
      path,
      { kind: 'match', entry, param: undefined, query: '' } as const,
    ]),
  );
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
      if (q === -1) return hit;
      if (target.includes('#', q)) return INVALID;
      return { kind: 'match', entry: hit.entry, param: undefined, query: target.slice(q) };
    }
    const checked = checkRequestTarget(target);
    if (checked === undefined) return INVALID;
    const found = resolve(checked.path);
    if (found === undefined) return NOT_FOUND;
    if (twinElsewhere(checked.path, found.entry)) return INVALID;
    return { kind: 'match', entry: found.entry, param: found.param, query: checked.query };
  }

  /**
   * Whether an upstream may serve `path` as one another route decides: read without case
   * (Express, ASP.NET Core, IIS; Java's equalsIgnoreCase, which reads `ı` as `i`), after
   * NFKC (`ａ` as `a`), or without a format suffix on its last segment (Rails' optional
   * `(.:format)`, Spring MVC's suffix match before 5.3). `/accounts/ADMIN/x`,
   * `/accounts/adm%C4%B1n/x` or `/accounts/admin.json` would otherwise pass a loose
   * `/accounts/` route to the handler of a stricter `/accounts/admin/`. A path whose folded
   * reading is no longer a path of one spelling (a fullwidth `/` or `.` folds to a segment
   * boundary or a dot segment) is a twin of whatever that becomes: refused too.
   */
  function twinElsewhere(path: string, entry: T): boolean {
    const bare = withoutFormat(path);
    if (bare !== undefined && differs(resolve(bare), entry)) return true;
    for (const spelling of bare === undefined ? [path] : [path, bare]) {
      const folded = foldPath(spelling);
      if (folded === spelling) continue;
      const read = checkRequestTarget(folded);
      if (read === undefined || read.query !== '') return true;
      if (differs(resolveFolded(read.path), entry)) return true;
      const foldedBare = withoutFormat(read.path);
      if (foldedBare !== undefined && differs(resolveFolded(foldedBare), entry)) return true;
    }
    return false;
  }
}

function differs<T>(found: { entry: T } | undefined, entry: T): boolean {
  return found !== undefined && found.entry !== entry;
}

/** The entry a checked path resolves to: exact, then parameterized, then the longest prefix. */
function createResolver<T>(
  entries: RouteTableEntries<T>,
): (path: string) => { entry: T; param: string | undefined } | undefined {
  const exact = new Map(entries.exact);
  const parameterized = entries.parameterized ?? [];
  const prefixes = [...(entries.prefixes ?? [])].sort((a, b) => b.prefix.length - a.prefix.length);
  return (path) => {
    const hit = exact.get(path);
    if (hit !== undefined) return { entry: hit, param: undefined };
    for (const { prefix, param, suffix = '', entry } of parameterized) {
      if (
        path.length > prefix.length + suffix.length &&
        path.startsWith(prefix) &&
        path.endsWith(suffix)
      ) {
        const segment = path.slice(prefix.length, path.length - suffix.length);
        if (param.test(segment)) return { entry, param: segment };
      }
    }
    // The rest has passed every rule of checkRequestTarget (no dot segment, no encoded `/` or
    // `\`, ...), and the prefix ends in `/`: the rest's segments are whole segments that the
    // upstream cannot resolve to a path outside the prefix (RFC 3986 §5.2.4).
    for (const { prefix, entry } of prefixes) {
      if (path.startsWith(prefix)) return { entry, param: path.slice(prefix.length) };
    }
    return undefined;
  };
}

/** The path without a `.suffix` on its last segment; undefined when it has none. */
function withoutFormat(path: string): string | undefined {
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') + 1 ? path.slice(0, dot) : undefined;
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

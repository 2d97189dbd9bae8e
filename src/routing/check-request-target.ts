export interface RequestTarget {
  /** The raw path, exactly as the client sent it. */
  readonly path: string;
  /** The raw query including its leading `?`, or '' when there is none. Never re-encoded. */
  readonly query: string;
}

// RFC 3986 §3.3: a path holds pchar (unreserved, sub-delims, ":", "@"), "/" and escapes.
// ";" is left out: Tomcat, Spring and Jetty strip `;params` from a segment before routing.
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]*$/;
// Upper-case hex only: RFC 3986 §6.2.2.1 makes `%3a` and `%3A` the same byte, and a
// configured path spells its escapes in upper case (config-schema), so a lower-case one
// would miss the route meant for that byte and fall under a shorter prefix.
const ESCAPE = /^[0-9A-F]{2}$/;

/**
 * The bytes never accepted percent-encoded in a path. Each is a spelling some component
 * downstream decodes into a different path than the raw one the route table compared:
 * controls; unreserved characters (RFC 3986 §2.3, §6.2.2.2: `%61dmin` is `admin` to Go,
 * Spring, Flask, Django); `.` (dot segments, §5.2.4), `/` and `\` (segment boundaries);
 * `%` itself (a second decoding, `%2561` -> `%61` -> `a`); and `;` (path parameters).
 */
function refusedEscape(byte: number): boolean {
  return (
    byte < 0x20 ||
    byte === 0x7f ||
    byte === 0x25 /* % */ ||
    byte === 0x2f /* / */ ||
    byte === 0x3b /* ; */ ||
    byte === 0x5c /* \ */ ||
    isUnreserved(byte)
  );
}

function isUnreserved(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) ||
    (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) ||
    byte === 0x2d /* - */ ||
    byte === 0x2e /* . */ ||
    byte === 0x5f /* _ */ ||
    byte === 0x7e /* ~ */
  );
}

/**
 * Splits a raw origin-form request target (RFC 9112 §3.2.1) into path and query, or
 * returns undefined when the path is not the one spelling of itself that every component
 * downstream agrees on: dot segments, empty segments (`//`, which nginx's merge_slashes and
 * others collapse), `;` raw or encoded, escapes of unreserved characters, `%`, `.`, `/`,
 * `\` or controls, lower-case escapes, raw characters outside RFC 3986's path set
 * (backslashes included), fragments, and anything not in origin form (absolute-form, `*`).
 * Such a spelling is refused outright instead of being cleaned up, as Spring Security's
 * StrictHttpFirewall does: the upstream (or http-proxy-3's `new URL()`) would resolve it
 * to another path than the route table did (`/accounts/%61dmin/x` reaching an upstream
 * that decodes it as `/accounts/admin/x` under a weaker prefix route).
 */
export function checkRequestTarget(target: string): RequestTarget | undefined {
  if (target.charCodeAt(0) !== 0x2f /* / */ || target.includes('#')) return undefined;
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q);
  if (!PATH_CHARS.test(path) || path.includes('//')) return undefined;
  for (let i = path.indexOf('%'); i !== -1; i = path.indexOf('%', i + 1)) {
    const hex = path.slice(i + 1, i + 3);
    if (!ESCAPE.test(hex) || refusedEscape(Number.parseInt(hex, 16))) return undefined;
  }
  for (const segment of path.split('/')) {
    if (segment === '.' || segment === '..') return undefined;
  }
  return { path, query };
}

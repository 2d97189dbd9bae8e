export interface RequestTarget {
  /** The raw path, exactly as the client sent it. */
  readonly path: string;
  /** The raw query including its leading `?`, or '' when there is none. Never re-encoded. */
  readonly query: string;
}

const HEX = /^[0-9A-Fa-f]{2}$/;

/**
 * Splits a raw origin-form request target (RFC 9112 §3.2.1) into path and query, or
 * returns undefined when the path is spelled in a way that some component downstream
 * could normalize into a different path: dot segments, percent-encoded `.`, `/`, `\` or
 * control characters, raw backslashes, fragments, and anything not in origin form
 * (absolute-form, `*`). Such a spelling is refused outright instead of being cleaned up,
 * because the upstream (or http-proxy-3's `new URL()`) would resolve it differently from
 * the route table (e.g. `/accounts/%2e%2e/admin` reaching the upstream as `/admin`).
 */
export function checkRequestTarget(target: string): RequestTarget | undefined {
  if (target.charCodeAt(0) !== 0x2f /* / */ || target.includes('#')) return undefined;
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q);
  if (path.includes('\\')) return undefined;
  for (let i = path.indexOf('%'); i !== -1; i = path.indexOf('%', i + 1)) {
    const hex = path.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return undefined;
    const byte = Number.parseInt(hex, 16);
    if (byte < 0x20 || byte === 0x7f || byte === 0x2e || byte === 0x2f || byte === 0x5c)
      return undefined;
  }
  for (const segment of path.split('/')) {
    if (segment === '.' || segment === '..') return undefined;
  }
  return { path, query };
}

import type { IncomingHttpHeaders } from 'node:http';

/**
 * Whether a state-changing request comes from the portal's own pages (OWASP CSRF Prevention
 * Cheat Sheet, "Verifying Origin With Standard Headers"): its `Origin` (RFC 6454 §7), or
 * without one its `Referer`, names the host the request was sent to (`Host`). A request that
 * names neither is refused: every browser that runs the pages sends `Origin` on a POST
 * (the Fetch standard) naming the page's origin, as long as the page's `Referrer-Policy`
 * does not strip it (no-referrer would: respond.ts sends same-origin). `null` (a sandboxed or
 * privacy-stripped origin) is refused too. With `https` set, the origin must be
 * an https one. Pure.
 */
export function fromOwnOrigin(headers: IncomingHttpHeaders, https: boolean): boolean {
  const host = headers.host;
  if (host === undefined || host === '') return false;
  const origin = headers.origin ?? refererOrigin(headers.referer);
  if (origin === undefined || origin === 'null') return false;
  try {
    const url = new URL(origin);
    if (url.protocol !== 'https:' && (https || url.protocol !== 'http:')) return false;
    // Host read as a URL of the origin's scheme reads it: `example.com:443` is the host of
    // `https://example.com`, as a client that names the default port sends it.
    return url.host === new URL(`${url.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

function refererOrigin(referer: string | undefined): string | undefined {
  if (referer === undefined) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

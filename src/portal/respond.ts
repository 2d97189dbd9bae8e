import type { ServerResponse } from 'node:http';
import type { Html } from './html.js';

/**
 * What every answer of the portal carries. The Content-Security-Policy allows no inline script
 * or style at all (the pages' CSS and JS are files of the portal: `'self'`), no frame around
 * the pages (`frame-ancestors`, with X-Frame-Options for older browsers), forms posting only
 * to the portal's origin and no `<base>` (CSP Level 3). no-store: a page may show a secret
 * (once) or a user's pairs, and must not be kept by the browser or a shared cache (RFC 9111
 * §5.2.2.5). same-origin: a page's URL never leaves in a Referer to another origin. Not
 * no-referrer: under it a browser sends `Origin: null` with the pages' own form posts (the
 * Fetch standard, "append a request Origin header"), which origin-check.ts must refuse
 * (test/e2e/portal-browser.test.ts found it in Chromium: no sign-in went through).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** Writes a whole page (no body for HEAD). */
export function writePage(
  res: ServerResponse,
  status: number,
  page: Html,
  requestId: string,
  extra: Record<string, string | string[]> = {},
): void {
  const body = page.text;
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    ...extra,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/**
 * 303 See Other to `location` (a path of the portal): after a form's POST the browser GETs it
 * (RFC 9110 §15.4.4), so a reload repeats no action (POST-redirect-GET).
 */
export function redirect(
  res: ServerResponse,
  location: string,
  requestId: string,
  extra: Record<string, string | string[]> = {},
): void {
  res.writeHead(303, {
    ...SECURITY_HEADERS,
    location,
    'content-length': '0',
    'x-request-id': requestId,
    ...extra,
  });
  res.end();
}

/** A file of the portal (its stylesheet, its script): public, but revalidated on each use. */
export function writeAsset(
  res: ServerResponse,
  contentType: string,
  body: string,
  requestId: string,
): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'cache-control': 'no-cache',
    'content-type': contentType,
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

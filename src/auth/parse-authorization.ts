import { hasControlCharacter } from '../identity/identity-formats.js';
/**
 * The Authorization header, parsed without deciding anything: verification happens later
 * and only the HTTP edge turns a result into a response.
 */
export type ParsedAuthorization =
  | { readonly scheme: 'none' }
  | { readonly scheme: 'basic'; readonly key: string; readonly secret: string }
  | { readonly scheme: 'bearer'; readonly token: string }
  /** A scheme the gateway does not accept (e.g. Digest): answered like missing credentials. */
  | { readonly scheme: 'unsupported' }
  | { readonly scheme: 'malformed_basic' }
  | { readonly scheme: 'malformed_bearer' };

const BASIC = /^basic +/i;
const BEARER = /^bearer +/i;
const BASIC_ALONE = /^basic *$/i;
// RFC 4648 §4 alphabet with correct padding; Buffer.from() would skip anything else silently.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// RFC 6750 §2.1 b64token.
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

const NONE = { scheme: 'none' } as const;
const UNSUPPORTED = { scheme: 'unsupported' } as const;
const MALFORMED_BASIC = { scheme: 'malformed_basic' } as const;
const MALFORMED_BEARER = { scheme: 'malformed_bearer' } as const;

export function parseAuthorization(
  header: string | undefined,
  maxTokenBytes: number,
): ParsedAuthorization {
  if (header === undefined || header === '') return NONE;
  // `Basic` with nothing after it (Node strips the trailing space of `Basic `) is a Basic
  // credential that cannot be decoded, not an unknown scheme. A bare `Bearer` stays
  // missing credentials: no token was presented to refuse (RFC 6750 §3.1).
  if (BASIC_ALONE.test(header)) return MALFORMED_BASIC;
  const basic = basicCredentials(header);
  if (basic !== undefined) return parseBasic(basic);
  const token = bearerToken(header);
  if (token !== undefined) {
    if (token.length > maxTokenBytes || !B64TOKEN.test(token)) return MALFORMED_BEARER;
    return { scheme: 'bearer', token };
  }
  return UNSUPPORTED;
}

/** The token of a Bearer header exactly as sent (not yet checked), or undefined. */
export function bearerToken(header: string): string | undefined {
  const bearer = BEARER.exec(header);
  return bearer === null ? undefined : header.slice(bearer[0].length);
}

/** The credentials of a Basic header exactly as sent (still encoded), or undefined. */
export function basicCredentials(header: string): string | undefined {
  const basic = BASIC.exec(header);
  return basic === null ? undefined : header.slice(basic[0].length);
}

/** RFC 7617: base64 of `user-id ":" password`, UTF-8, split at the first colon. */
export function parseBasic(encoded: string): ParsedAuthorization {
  if (encoded.length === 0 || encoded.length > 1024 || !BASE64.test(encoded))
    return MALFORMED_BASIC;
  const bytes = Buffer.from(encoded, 'base64');
  // Non-zero padding bits decode to the same bytes as the canonical form: refuse them too.
  if (bytes.toString('base64') !== encoded) return MALFORMED_BASIC;
  let decoded: string;
  try {
    decoded = utf8.decode(bytes);
  } catch {
    return MALFORMED_BASIC;
  }
  const colon = decoded.indexOf(':');
  if (colon === -1 || hasControlCharacter(decoded)) return MALFORMED_BASIC;
  // The key is copied out, not sliced: V8 keeps a slice's whole parent string alive, and the
  // key outlives the request in the verified-credential cache, which must never hold a
  // secret (the parent is `key:secret`).
  const key = Buffer.from(decoded.slice(0, colon), 'utf8').toString('utf8');
  return { scheme: 'basic', key, secret: decoded.slice(colon + 1) };
}

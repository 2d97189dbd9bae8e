import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionRef } from '../credentials/credential-store.js';
import { subjectTag } from '../identity/key-id.js';

/**
 * A session id: the user's shard tag (5 hex, identity/key-id.ts's subjectTag of the username),
 * a `.`, and 256 bits from the CSPRNG in base64url (OWASP Session Management: at least 64 bits
 * of entropy). The tag lets a store find the session from its id alone, beside the user's own
 * records (one Redis Cluster slot); it tells 20 bits of a hash of the username to whoever holds
 * the cookie, which is the user. Stores keep the SHA-256 of the whole id, never the id.
 */
const SESSION_ID = /^([0-9a-f]{5})\.([A-Za-z0-9_-]{43})$/;

export function newSessionId(username: string): string {
  return `${subjectTag(username)}.${randomBytes(32).toString('base64url')}`;
}

/** Where the session of `id` is kept; undefined for a value that is no session id. */
export function sessionRefOf(id: string): SessionRef | undefined {
  const tag = SESSION_ID.exec(id)?.[1];
  if (tag === undefined) return undefined;
  return { tag, idHash: createHash('sha256').update(id).digest('hex') };
}

/**
 * The session's CSRF token (the OWASP CSRF Prevention Cheat Sheet's synchronizer token,
 * HMAC-based): an HMAC of a fixed text under the session id, so it is per session, kept
 * nowhere, and of no use without the session cookie, which no page script can read (HttpOnly).
 */
export function csrfTokenOf(id: string): string {
  return createHmac('sha256', id).update('accounts-gateway portal csrf').digest('base64url');
}

/** A random one-use token of a form (the create form's), 128 bits in base64url. */
export function newFormNonce(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Whether a token a form sent is `expected`, compared in constant time: both are hashed first,
 * so neither their contents nor their lengths change how long the comparison takes.
 */
export function sameToken(sent: string | undefined, expected: string): boolean {
  if (sent === undefined) return false;
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(sent), digest(expected));
}

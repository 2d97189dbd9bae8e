import type { IncomingMessage } from 'node:http';
import type { PortalSession, SessionRef, UserRecord } from '../credentials/credential-store.js';
import type { Identity } from '../identity/identity.js';
import { readCookie, sessionCookieName } from './cookies.js';
import type { SignedIn } from './pages/layout.js';
import type { PortalOptions } from './portal-options.js';
import { isLive, seenAgain } from './session-lifetimes.js';
import { csrfTokenOf, sessionRefOf } from './session-id.js';

/** A request of a signed-in user: its session as stored now, and who it acts for. */
export interface Visit {
  /** The session id the cookie holds: only ever in the cookie, and hashed for the store. */
  readonly id: string;
  readonly ref: SessionRef;
  readonly session: PortalSession;
  readonly user: UserRecord;
  readonly signedIn: SignedIn;
  /**
   * The caller the rules of `/keys` see: the user's subject and its scopes as they stand now.
   * Like a token the gateway issued (method `bearer`, no pair to bound a new one's life).
   */
  readonly caller: Identity;
}

/** The session id the request's cookie holds, when it has one (once). */
export function cookieSessionId(options: PortalOptions, req: IncomingMessage): string | undefined {
  return readCookie(req.headers.cookie, sessionCookieName(options.secure));
}

/**
 * The signed-in visit `req` makes, or undefined (no cookie, an unknown or ended session, a
 * user removed or moved to another subject: such a session is ended here). Seen again, the
 * session's idle end moves on (written once a minute at most).
 */
export async function visitOf(
  options: PortalOptions,
  req: IncomingMessage,
): Promise<Visit | undefined> {
  const id = cookieSessionId(options, req);
  const ref = id === undefined ? undefined : sessionRefOf(id);
  if (id === undefined || ref === undefined) return undefined;
  const { store } = options.keys;
  const nowMs = options.now();
  const found = await store.getSession(ref, nowMs);
  if (found === undefined) return undefined;
  const user = await store.getUser(found.username);
  if (
    user === undefined ||
    user.subject !== found.subject ||
    !isLive(found, nowMs, options.lifetimes)
  ) {
    await store.endSession(ref);
    return undefined;
  }
  const session = await seen(options, ref, found, nowMs);
  if (session === undefined) return undefined;
  return {
    id,
    ref,
    session,
    user,
    signedIn: { username: user.username, csrf: csrfTokenOf(id) },
    caller: {
      subject: user.subject,
      method: 'bearer',
      username: user.username,
      scopes: user.scopes,
    },
  };
}

/** The session after this visit: seen again when due; undefined when it ended meanwhile. */
async function seen(
  options: PortalOptions,
  ref: SessionRef,
  found: PortalSession,
  nowMs: number,
): Promise<PortalSession | undefined> {
  const next = seenAgain(found, nowMs, options.lifetimes);
  if (next === undefined) return found;
  if (await options.keys.store.replaceSession(ref, found, next)) return next;
  // Another request of the same session wrote first (a second tab): read what it wrote.
  return options.keys.store.getSession(ref, nowMs);
}

/**
 * Changes the visit's session by `change` (compare-and-set, read again and retried when another
 * request of the session wrote meanwhile): the session written, or undefined when it has ended.
 */
export async function changeSession(
  options: PortalOptions,
  visit: Visit,
  change: (session: PortalSession) => PortalSession | undefined,
): Promise<PortalSession | undefined> {
  const { store } = options.keys;
  let current: PortalSession | undefined = visit.session;
  for (let attempt = 0; attempt < 3 && current !== undefined; attempt += 1) {
    const next = change(current);
    if (next === undefined) return undefined;
    if (await store.replaceSession(visit.ref, current, next)) return next;
    current = await store.getSession(visit.ref, options.now());
  }
  return undefined;
}

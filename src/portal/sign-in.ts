import { checkLogin, parseLogin } from '../endpoints/check-login.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { EndpointContext } from '../http/routes.js';
import { clearedCookie, sessionCookie, sessionCookieName } from './cookies.js';
import { oneField, readForm } from './form-body.js';
import { PageError, PORTAL_MESSAGES } from './page-error.js';
import { SIGN_IN_REFUSED, signInPage } from './pages/sign-in-page.js';
import type { PortalOptions } from './portal-options.js';
import { redirect, writePage } from './respond.js';
import { startSession } from './session-lifetimes.js';
import { newSessionId, sameToken, sessionRefOf } from './session-id.js';
import { cookieSessionId, type Visit } from './visit.js';

/** `GET sign-in`: the form, or the pairs for a user already signed in. */
export function showSignIn(
  options: PortalOptions,
  { res, requestId }: EndpointContext,
  visit: Visit | undefined,
): void {
  if (visit !== undefined) return redirect(res, options.paths.home, requestId);
  writePage(res, 200, signInPage({ paths: options.paths }), requestId);
}

/**
 * `POST sign-in`: the password checked as `POST /auth/token` checks it (check-login.ts: the
 * same lockout, the same answer for an unknown user and a wrong password), then a new session
 * under a new random id (never one the request brought: no session fixation, OWASP Session
 * Management "Renew the Session ID After Any Privilege Level Change"), the old one ended.
 */
export async function signIn(options: PortalOptions, context: EndpointContext): Promise<void> {
  const { req, res, requestId, client } = context;
  const { paths } = options;
  const form = await readForm(req, res, options.maxBodyBytes);
  const username = oneField(form, 'username') ?? '';
  const refused = (code: 'invalid_credentials' | 'bad_request', error: string) =>
    new PageError(code, signInPage({ paths, username, error }));
  const login = (() => {
    try {
      return parseLogin({ username, password: oneField(form, 'password') ?? '' });
    } catch (error) {
      throw refused('bad_request', error instanceof GatewayError ? error.message : SIGN_IN_REFUSED);
    }
  })();
  const user = await checkLogin(options.login, login, client.clientAddress()).catch(
    (error: unknown) => {
      if (!(error instanceof GatewayError) || error.code !== 'rate_limited') throw error;
      const page = signInPage({ paths, username, error: PORTAL_MESSAGES.tooManyAttempts });
      throw new PageError('rate_limited', page, {
        ...(error.retryAfterSec === undefined ? {} : { retryAfterSec: error.retryAfterSec }),
      });
    },
  );
  if (user === undefined) throw refused('invalid_credentials', SIGN_IN_REFUSED);
  const { store } = options.keys;
  const earlier = cookieSessionId(options, req);
  const earlierRef = earlier === undefined ? undefined : sessionRefOf(earlier);
  if (earlierRef !== undefined) await store.endSession(earlierRef);
  const id = newSessionId(user.username);
  const ref = sessionRefOf(id);
  const session = startSession(user, options.now(), options.lifetimes);
  // The user removed (or given another subject) since its password was checked: no session.
  if (ref === undefined || !(await store.createSession(ref, session)))
    throw refused('invalid_credentials', SIGN_IN_REFUSED);
  const name = sessionCookieName(options.secure);
  redirect(res, paths.home, requestId, { 'set-cookie': sessionCookie(name, id, options.secure) });
}

/** `POST sign-out`: ends the session (with its CSRF token: no other site signs a user out). */
export async function signOut(
  options: PortalOptions,
  { req, res, requestId }: EndpointContext,
  visit: Visit | undefined,
): Promise<void> {
  const cleared = clearedCookie(sessionCookieName(options.secure), options.secure);
  if (visit !== undefined) {
    const form = await readForm(req, res, options.maxBodyBytes);
    if (!sameToken(oneField(form, 'csrf'), visit.signedIn.csrf))
      throw new GatewayError('forbidden', { message: PORTAL_MESSAGES.csrf });
    await options.keys.store.endSession(visit.ref);
  }
  redirect(res, options.paths.signIn, requestId, { 'set-cookie': cleared });
}

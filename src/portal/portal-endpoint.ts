import type { ServerResponse } from 'node:http';
import { errorHeaders, writeErrorWith } from '../errors/error-envelope.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { EndpointContext, EndpointRoute } from '../http/routes.js';
import { PORTAL_CSS, PORTAL_JS } from './assets.js';
import { clearedCookie, sessionCookieName } from './cookies.js';
import { fromOwnOrigin } from './origin-check.js';
import { PageError, PORTAL_MESSAGES } from './page-error.js';
import {
  createPair,
  revokePair,
  rollPair,
  showNewPair,
  showPairs,
  showRevoke,
  showRoll,
} from './pair-actions.js';
import { errorPage } from './pages/error-page.js';
import { pageOf, type PortalPage } from './portal-paths.js';
import type { PortalOptions } from './portal-options.js';
import { redirect, writeAsset, writePage } from './respond.js';
import { showSignIn, signIn, signOut } from './sign-in.js';
import { cookieSessionId, visitOf, type Visit } from './visit.js';

/** The methods each page takes; another is 405 with these in `Allow`. */
const METHODS: Readonly<Record<PortalPage['page'], readonly string[]>> = {
  home: ['GET', 'HEAD'],
  'sign-in': ['GET', 'HEAD', 'POST'],
  'sign-out': ['POST'],
  'new-pair': ['GET', 'HEAD'],
  pairs: ['POST'],
  revoke: ['GET', 'HEAD', 'POST'],
  roll: ['GET', 'HEAD', 'POST'],
  style: ['GET', 'HEAD'],
  script: ['GET', 'HEAD'],
};

/**
 * The key holder's web application (docs/portal.md), one route under `portal.basePath`:
 * server-rendered pages whose forms work without script. Every POST must come from the
 * portal's own origin (origin-check.ts) and, once signed in, carry the session's CSRF token;
 * the session cookie is SameSite=Strict besides. Errors are pages too (writeError below).
 */
export function createPortalEndpoint(options: PortalOptions): EndpointRoute {
  return {
    kind: 'endpoint',
    name: 'portal',
    methods: new Set(['GET', 'HEAD', 'POST']),
    allow: ['GET', 'HEAD', 'POST'],
    // No Authorization header: the session cookie is read by the pages themselves.
    schemes: null,
    scopes: [],
    handle: (context) => handle(options, context),
    writeError: (res, error, requestId) => writeErrorPage(options, res, error, requestId),
  };
}

async function handle(options: PortalOptions, context: EndpointContext): Promise<void> {
  const { req, res, requestId } = context;
  const target = pageOf(context.param ?? '');
  if (target === undefined)
    throw new GatewayError('not_found', { message: PORTAL_MESSAGES.notFound });
  const method = req.method ?? '';
  const allow = METHODS[target.page];
  if (!allow.includes(method)) throw new GatewayError('method_not_allowed', { allow });
  if (target.page === 'style')
    return writeAsset(res, 'text/css; charset=utf-8', PORTAL_CSS, requestId);
  if (target.page === 'script')
    return writeAsset(res, 'text/javascript; charset=utf-8', PORTAL_JS, requestId);
  const posting = method === 'POST';
  // Before anything is read or changed: a form posted from another site's page is refused.
  if (posting && !fromOwnOrigin(req.headers, options.secure))
    throw new GatewayError('forbidden', { message: PORTAL_MESSAGES.csrf });
  const visit = await visitOf(options, req);
  if (target.page === 'sign-in')
    return posting ? signIn(options, context) : showSignIn(options, context, visit);
  if (target.page === 'sign-out') return signOut(options, context, visit);
  if (visit === undefined) return toSignIn(options, context);
  return serveSignedIn(options, context, visit, target);
}

function serveSignedIn(
  options: PortalOptions,
  context: EndpointContext,
  visit: Visit,
  target: PortalPage,
): Promise<void> {
  switch (target.page) {
    case 'new-pair':
      return showNewPair(options, context, visit);
    case 'pairs':
      return createPair(options, context, visit);
    case 'revoke':
      return context.req.method === 'POST'
        ? revokePair(options, context, visit, target.key)
        : showRevoke(options, context, visit, target.key);
    case 'roll':
      return context.req.method === 'POST'
        ? rollPair(options, context, visit, target.key)
        : showRoll(options, context, visit, target.key);
    default:
      return showPairs(options, context, visit);
  }
}

/** No session (or an ended one): to the sign-in form, the stale cookie removed. */
function toSignIn(options: PortalOptions, { req, res, requestId }: EndpointContext): Promise<void> {
  const stale = cookieSessionId(options, req) !== undefined;
  const name = sessionCookieName(options.secure);
  redirect(
    res,
    options.paths.signIn,
    requestId,
    stale ? { 'set-cookie': clearedCookie(name, options.secure) } : {},
  );
  return Promise.resolve();
}

/**
 * Every error of a portal request as a page: a refusal the portal wrote its own page for
 * (PageError), else the error's fixed sentence, with the request id; never a stack trace, never
 * the JSON envelope, and no challenge (a browser would open its own sign-in box). Written as
 * the envelope is (writeErrorWith, errorHeaders): never throwing, cutting a started response.
 */
function writeErrorPage(
  options: PortalOptions,
  res: ServerResponse,
  error: GatewayError,
  requestId: string,
): void {
  writeErrorWith(res, () => {
    const page =
      error instanceof PageError
        ? error.page
        : errorPage({
            paths: options.paths,
            status: error.status,
            message: error.message,
            requestId,
          });
    writePage(res, error.status, page, requestId, errorHeaders(error));
  });
}

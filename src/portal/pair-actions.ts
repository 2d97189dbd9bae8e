import { keyView, type KeyView } from '../credentials/key-view.js';
import { requestOrigin } from '../endpoints/audit-origin.js';
import { createPairFor, parseCreateBody } from '../endpoints/create-key.js';
import { KEYS_PAGE_MESSAGES } from '../endpoints/key-page-query.js';
import { callerOf, ownPairOf } from '../endpoints/keys-caller.js';
import { revokePairOf } from '../endpoints/revoke-key.js';
import { rollPairOf } from '../endpoints/roll-key.js';
import { DEFAULT_ROLL_OVERLAP_SEC, ROLL_MESSAGES } from '../credentials/key-roll.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { EndpointContext } from '../http/routes.js';
import { KEY_ID } from '../identity/identity-formats.js';
import { oneField, readForm } from './form-body.js';
import { PageError, PORTAL_MESSAGES } from './page-error.js';
import { alreadySentPage, createdPage } from './pages/created-page.js';
import { newPairPage } from './pages/new-pair-page.js';
import { pairsPage } from './pages/pairs-page.js';
import { revokePage } from './pages/revoke-page.js';
import { ROLL_OVERLAPS, rollPage } from './pages/roll-page.js';
import { PAIRS_PER_PAGE, type PortalOptions } from './portal-options.js';
import { redirect, writePage } from './respond.js';
import { newFormNonce, sameToken } from './session-id.js';
import { changeSession, type Visit } from './visit.js';

/** What a redirect after an action may tell the list to say: a fixed sentence per name. */
const NOTICES: ReadonlyMap<string, string> = new Map([['revoked', 'The key pair is revoked.']]);

/** The form's CSRF token is the session's (compared in constant time): 403 otherwise. */
function checkCsrf(form: URLSearchParams, visit: Visit): void {
  if (!sameToken(oneField(form, 'csrf'), visit.signedIn.csrf))
    throw new GatewayError('forbidden', { message: PORTAL_MESSAGES.csrf });
}

/**
 * `GET` the base path: a page of the holder's pairs, newest first (`?after=<key id>` for the
 * next), read as `GET /keys` reads them: keys.requiredScopes applies, only the own subject.
 */
export async function showPairs(
  options: PortalOptions,
  { res, requestId, query }: EndpointContext,
  visit: Visit,
): Promise<void> {
  const caller = await callerOf(options.keys, visit.caller);
  const params = new URLSearchParams(query);
  const after = params.get('after') ?? undefined;
  if (after !== undefined && !KEY_ID.pattern.test(after))
    throw new GatewayError('bad_request', { message: KEYS_PAGE_MESSAGES.lastId });
  const records = await options.keys.store.listKeys(caller.subject, {
    limit: PAIRS_PER_PAGE + 1,
    order: 'desc',
    after,
  });
  if (records === undefined)
    throw new GatewayError('bad_request', { message: KEYS_PAGE_MESSAGES.lastId });
  const nowMs = options.now();
  const shown = records.slice(0, PAIRS_PER_PAGE).map((record) => keyView(record, nowMs));
  const more = records.length > PAIRS_PER_PAGE;
  const notice = NOTICES.get(params.get('notice') ?? '');
  const view = {
    paths: options.paths,
    signedIn: visit.signedIn,
    pairs: shown,
    later: after !== undefined,
    ...(more ? { nextAfter: shown.at(-1)?.key } : {}),
    ...(notice === undefined ? {} : { notice }),
  };
  writePage(res, 200, pairsPage(view), requestId);
}

/**
 * `GET keys/new`: the create form, with a new one-use token kept in the session: the form's
 * answer (the secret) is not redirected, so a reload sends the form again, and the token, then
 * spent, makes sure it makes no second pair and shows no secret.
 */
export async function showNewPair(
  options: PortalOptions,
  { req, res, requestId }: EndpointContext,
  visit: Visit,
): Promise<void> {
  const caller = await callerOf(options.keys, visit.caller);
  const nonce = await openForm(options, req, visit);
  if (nonce === undefined) return redirect(res, options.paths.signIn, requestId);
  const view = { paths: options.paths, signedIn: visit.signedIn, nonce, scopes: caller.scopes };
  writePage(res, 200, newPairPage(view), requestId);
}

/**
 * A new one-use token for a form whose sending makes a pair (create, roll), kept in the
 * session: the form opened before it goes stale. Undefined when the session has ended. A HEAD
 * shows no form, so it keeps the open one's token rather than spoiling it.
 */
async function openForm(
  options: PortalOptions,
  req: EndpointContext['req'],
  visit: Visit,
): Promise<string | undefined> {
  if (req.method === 'HEAD') return visit.session.formNonce ?? '';
  const nonce = newFormNonce();
  const kept = await changeSession(options, visit, (session) => ({ ...session, formNonce: nonce }));
  return kept === undefined ? undefined : nonce;
}

/**
 * The form of a page whose sending makes a pair (create, roll): read, its CSRF token checked,
 * and its one-use token still the session's, else the "already sent" page. `spend` uses the
 * token up, atomically in the store, just before the pair is made: a second sending (a reload,
 * a double click, a second tab) finds it gone. Until then a form shown again with what was
 * wrong may be sent again.
 */
async function oneUseForm(
  options: PortalOptions,
  req: EndpointContext['req'],
  res: EndpointContext['res'],
  visit: Visit,
): Promise<{ form: URLSearchParams; spend: () => Promise<void> }> {
  const form = await readForm(req, res, options.maxBodyBytes);
  checkCsrf(form, visit);
  const sent = oneField(form, 'nonce');
  const fresh = (nonce: string | undefined): boolean =>
    nonce !== undefined && sameToken(sent, nonce);
  const alreadySent = (): PageError =>
    new PageError('conflict', alreadySentPage(options.paths, visit.signedIn), {
      message: PORTAL_MESSAGES.alreadySent,
    });
  if (!fresh(visit.session.formNonce)) throw alreadySent();
  return {
    form,
    async spend() {
      const spent = await changeSession(options, visit, (session) =>
        fresh(session.formNonce) ? { ...session, formNonce: undefined } : undefined,
      );
      if (spent === undefined) throw alreadySent();
    },
  };
}

/**
 * `POST keys`: makes the pair by the rules of `POST /keys` (create-key.ts: the same body
 * checks, scopes within the holder's own, the cap), and answers with its secret, this once,
 * `no-store`, its form used up (oneUseForm).
 */
export async function createPair(
  options: PortalOptions,
  context: EndpointContext,
  visit: Visit,
): Promise<void> {
  const { req, res, requestId } = context;
  const { form, spend } = await oneUseForm(options, req, res, visit);
  const { paths } = options;
  const { signedIn } = visit;
  const caller = await callerOf(options.keys, visit.caller);
  const label = oneField(form, 'label') ?? '';
  const expiresIn = oneField(form, 'expires_in') ?? '';
  const scopes = form.getAll('scopes');
  const nowMs = options.now();
  const asked = (() => {
    try {
      return parseCreateBody(
        {
          label,
          ...(expiresIn === ''
            ? {}
            : { expires_in: /^\d{1,12}$/.test(expiresIn) ? Number(expiresIn) : expiresIn }),
          scopes,
        },
        nowMs,
      );
    } catch (error) {
      if (!(error instanceof GatewayError) || error.code !== 'bad_request') throw error;
      // The token is not spent: the form, written back with what was wrong, may be sent again.
      const nonce = visit.session.formNonce ?? '';
      const values = { label, expiresIn, scopes };
      const page = newPairPage({
        paths,
        signedIn,
        nonce,
        scopes: caller.scopes,
        values,
        error: error.message,
      });
      throw new PageError('bad_request', page, { message: error.message });
    }
  })();
  await spend();
  const origin = requestOrigin(caller, context, 'portal');
  const { record, secret } = await createPairFor(options.keys, caller, asked, nowMs, origin);
  const pair = keyView(record, nowMs);
  writePage(res, 201, createdPage({ paths, signedIn, pair, secret }), requestId, {
    pragma: 'no-cache',
  });
}

/** The visitor's own pair `key` (404 otherwise, whoever's it is), as its holder sees it. */
async function ownPair(options: PortalOptions, visit: Visit, key: string): Promise<KeyView> {
  return keyView(await ownPairOf(options.keys, visit.caller, key), options.now());
}

/** `GET keys/{key}/revoke`: what the revocation ends, and the form that confirms it. */
export async function showRevoke(
  options: PortalOptions,
  { res, requestId }: EndpointContext,
  visit: Visit,
  key: string,
): Promise<void> {
  await callerOf(options.keys, visit.caller);
  const pair = await ownPair(options, visit, key);
  const view = { paths: options.paths, signedIn: visit.signedIn, pair, lastActive: false };
  writePage(res, 200, revokePage(view), requestId);
}

/**
 * `POST keys/{key}/revoke`: the revocation of `DELETE /keys/{key}` (revoke-key.ts: the same
 * store call, eviction and announcement), then back to the list. The last active pair is
 * refused, as the API does without `?force=true`, until the form's box says so.
 */
export async function revokePair(
  options: PortalOptions,
  context: EndpointContext,
  visit: Visit,
  key: string,
): Promise<void> {
  const { req, res, requestId } = context;
  const form = await readForm(req, res, options.maxBodyBytes);
  checkCsrf(form, visit);
  const caller = await callerOf(options.keys, visit.caller);
  const force = oneField(form, 'force') === 'yes';
  try {
    await revokePairOf(options.keys, caller, key, force, requestOrigin(caller, context, 'portal'));
  } catch (error) {
    if (!(error instanceof GatewayError) || error.code !== 'conflict') throw error;
    const pair = await ownPair(options, visit, key);
    const view = {
      paths: options.paths,
      signedIn: visit.signedIn,
      pair,
      lastActive: true,
      error: PORTAL_MESSAGES.lastActive,
    };
    throw new PageError('conflict', revokePage(view), { message: PORTAL_MESSAGES.lastActive });
  }
  redirect(res, `${options.paths.home}?notice=revoked`, requestId);
}

/**
 * `GET keys/{key}/roll`: the pair, what a roll does, and the form choosing the overlap, with a
 * new one-use token kept in the session (as the create form's: its answer shows a secret).
 * Only a usable pair can be rolled: an ended one answers 409 here already.
 */
export async function showRoll(
  options: PortalOptions,
  { req, res, requestId }: EndpointContext,
  visit: Visit,
  key: string,
): Promise<void> {
  await callerOf(options.keys, visit.caller);
  const pair = await ownPair(options, visit, key);
  if (pair.status !== 'active')
    throw new GatewayError('conflict', { message: ROLL_MESSAGES.ended });
  const nonce = await openForm(options, req, visit);
  if (nonce === undefined) return redirect(res, options.paths.signIn, requestId);
  const view = {
    paths: options.paths,
    signedIn: visit.signedIn,
    pair,
    nonce,
    overlapSec: DEFAULT_ROLL_OVERLAP_SEC,
  };
  writePage(res, 200, rollPage(view), requestId);
}

/** The overlap the roll form sent: one of those it offers (seconds), else undefined. */
export function formOverlapSec(sent: string | undefined): number | undefined {
  return ROLL_OVERLAPS.find(({ seconds }) => String(seconds) === sent)?.seconds;
}

/**
 * `POST keys/{key}/roll`: the roll of `POST /keys/{key}/roll` (roll-key.ts rollPairOf: the
 * same checks, store call, eviction and announcement), answered as the create form is: the
 * new pair's secret this once, `no-store`, and the old pair's new end. The form's token is
 * spent before the roll, atomically: a reload of the answer rolls nothing and shows no secret.
 */
export async function rollPair(
  options: PortalOptions,
  context: EndpointContext,
  visit: Visit,
  key: string,
): Promise<void> {
  const { req, res, requestId } = context;
  const { form, spend } = await oneUseForm(options, req, res, visit);
  const { paths } = options;
  const { signedIn } = visit;
  const caller = await callerOf(options.keys, visit.caller);
  const overlapSec = formOverlapSec(oneField(form, 'overlap_sec'));
  if (overlapSec === undefined) {
    // The token is not spent: the form, shown again, may be sent again.
    const pair = await ownPair(options, visit, key);
    const page = rollPage({
      paths,
      signedIn,
      pair,
      nonce: visit.session.formNonce ?? '',
      overlapSec: DEFAULT_ROLL_OVERLAP_SEC,
      error: PORTAL_MESSAGES.overlap,
    });
    throw new PageError('bad_request', page, { message: PORTAL_MESSAGES.overlap });
  }
  await spend();
  const nowMs = options.now();
  const origin = requestOrigin(caller, context, 'portal');
  const { rolled, secret } = await rollPairOf(options.keys, caller, key, overlapSec, nowMs, origin);
  const pair = keyView(rolled.successor, nowMs);
  const previous = keyView(rolled.rolled, nowMs);
  writePage(res, 201, createdPage({ paths, signedIn, pair, secret, rolled: previous }), requestId, {
    pragma: 'no-cache',
  });
}

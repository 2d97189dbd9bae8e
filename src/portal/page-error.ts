import type { ErrorCode } from '../errors/error-codes.js';
import { GatewayError, type GatewayErrorOptions } from '../errors/gateway-error.js';
import type { Html } from './html.js';

/**
 * A refusal the portal answers with a page of its own (the sign-in form again, the create form
 * with what was wrong): still a GatewayError, so the access line and the metrics count its
 * code like any other, written by the portal's error writer with `page` as its body.
 */
export class PageError extends GatewayError {
  readonly page: Html;

  constructor(code: ErrorCode, page: Html, options: GatewayErrorOptions = {}) {
    super(code, options);
    this.name = 'PageError';
    this.page = page;
  }
}

/**
 * The fixed sentences of the portal's refusals (GatewayErrorOptions.message: never the
 * request's text).
 */
export const PORTAL_MESSAGES = {
  csrf: 'The form was not sent from this portal’s own page, or the page is out of date: go back, reload it and try again.',
  notFound: 'There is no such page in the portal.',
  lastActive: 'This is your last active key pair: tick the box below to revoke it even so.',
  alreadySent: 'This form was already sent.',
  overlap: 'Choose one of the overlaps offered: none, 5 minutes, 1 hour or 24 hours.',
  tooManyAttempts:
    'Too many failed sign-ins from here or for this user: wait a while and try again.',
} as const;

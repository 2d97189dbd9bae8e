import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { page, type SignedIn } from './layout.js';

const TITLES: Readonly<Record<number, string>> = {
  400: 'The request cannot be used',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not allowed on this page',
  408: 'Too slow',
  409: 'Not done',
  413: 'Too large',
  415: 'Not a form',
  422: 'Limit reached',
  429: 'Too many requests',
  503: 'Unavailable for now',
};

export interface ErrorView {
  readonly paths: PortalPaths;
  readonly status: number;
  /** A fixed sentence (the error catalogue's, or its override): never the request's text. */
  readonly message: string;
  readonly requestId: string;
  readonly signedIn?: SignedIn | undefined;
}

/** An error as a page: what went wrong in words, the request id to quote, the way back. */
export function errorPage({ paths, status, message, requestId, signedIn }: ErrorView): Html {
  const title = TITLES[status] ?? (status >= 500 ? 'Something failed' : 'The request failed');
  return page(
    { paths, title, signedIn },
    html`<p id="error-message">${message}</p>
      <p class="muted">
        Request id: <code id="request-id">${requestId}</code> (quote it when you report a problem).
      </p>
      <p><a class="button" href="${paths.home}" id="home">Back to your key pairs</a></p>`,
  );
}

import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';

/** Who is signed in, as every page of a session shows it (and its sign-out form needs). */
export interface SignedIn {
  readonly username: string;
  /** The session's CSRF token: in every form the page holds. */
  readonly csrf: string;
}

export interface Chrome {
  readonly paths: PortalPaths;
  /** The page's `<h1>` and the start of its `<title>`. */
  readonly title: string;
  readonly signedIn?: SignedIn | undefined;
}

/** The hidden field of the session's CSRF token, in every form a session posts. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="csrf" value="${csrf}" />`;
}

/**
 * A whole page: the document, its stylesheet and script (files of the portal, as the CSP
 * wants), a skip link for keyboard users, the signed-in user and the sign-out form, then `main`.
 */
export function page(chrome: Chrome, main: Html): Html {
  const { paths, title, signedIn } = chrome;
  const account =
    signedIn === undefined
      ? ''
      : html`<nav class="account" aria-label="Account">
          <span>Signed in as <strong id="signed-in-user">${signedIn.username}</strong></span>
          <form method="post" action="${paths.signOut}" id="sign-out-form">
            ${csrfField(signedIn.csrf)}
            <button type="submit" id="sign-out" class="secondary">Sign out</button>
          </form>
        </nav>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · accounts-gateway</title>
        <link rel="stylesheet" href="${paths.style}" />
        <script src="${paths.script}" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to the content</a>
        <header class="bar">
          <a class="brand" href="${paths.home}">accounts-gateway</a>
          ${account}
        </header>
        <main id="main" tabindex="-1">
          <h1>${title}</h1>
          ${main}
        </main>
      </body>
    </html> `;
}

/** A message about the form just sent, read out by screen readers as it appears. */
export function formError(message: string | undefined): Html {
  return message === undefined
    ? html``
    : html`<p class="error" role="alert" id="form-error">${message}</p>`;
}

/** An ISO 8601 time as `2026-11-27 19:40 UTC` in a `<time>`; a dash for none. */
export function when(iso: string | null | undefined, none = '—'): Html {
  if (iso === null || iso === undefined) return html`${none}`;
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

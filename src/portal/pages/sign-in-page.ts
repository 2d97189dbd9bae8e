import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { formError, page } from './layout.js';

/**
 * What a refused sign-in says, whatever was wrong: an unknown user and a wrong password get
 * the same words (and the same status and time), as at POST /auth/token.
 */
export const SIGN_IN_REFUSED = 'The username or the password is not right.';

export interface SignInView {
  readonly paths: PortalPaths;
  /** The username just tried, written back into its field. */
  readonly username?: string | undefined;
  readonly error?: string | undefined;
}

/** The sign-in form: a web-app user's username and password. */
export function signInPage({ paths, username, error }: SignInView): Html {
  return page(
    { paths, title: 'Sign in' },
    html`<p>Sign in with your web-app username and password to see and manage your key pairs.</p>
      ${formError(error)}
      <form method="post" action="${paths.signIn}" id="sign-in-form" class="stack">
        <label for="username">Username</label>
        <input
          id="username"
          name="username"
          type="text"
          autocomplete="username"
          autocapitalize="none"
          spellcheck="false"
          maxlength="128"
          required
          value="${username ?? ''}"
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="current-password"
          maxlength="1024"
          required
        />
        <button type="submit" id="sign-in">Sign in</button>
      </form>`,
  );
}

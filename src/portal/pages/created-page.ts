import type { KeyView } from '../../credentials/key-view.js';
import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { page, when, type SignedIn } from './layout.js';

export interface CreatedView {
  readonly paths: PortalPaths;
  readonly signedIn: SignedIn;
  readonly pair: KeyView;
  readonly secret: string;
  /** A roll's answer: the rolled pair, as the roll left it (its new end, or revoked). */
  readonly rolled?: KeyView | undefined;
}

/** What a roll's answer says of the rolled pair: when it ends, or that it has. */
function rolledPart(rolled: KeyView | undefined): Html {
  if (rolled === undefined) return html``;
  const end =
    rolled.status === 'active'
      ? html`keeps working until ${when(rolled.expires_at, 'its expiry')}, then ends everywhere`
      : html`has ended: it is refused from now on`;
  return html`<p class="notice" id="rolled-pair">
    The old pair <code id="rolled-key">${rolled.key}</code> <span id="rolled-end">${end}</span>.
  </p>`;
}

/**
 * The answer to the create form: the new pair with its secret, the only time the secret is
 * shown. Selectable text, and a copy button that the portal's script shows (without script
 * the button stays hidden and the text is copied by hand).
 */
export function createdPage({ paths, signedIn, pair, secret, rolled }: CreatedView): Html {
  return page(
    { paths, title: 'Your new key pair', signedIn },
    html`${rolledPart(rolled)}
      <p class="warning" role="alert" id="secret-warning">
        <strong>Copy the secret now.</strong> It is shown this once: it is not kept anywhere, and
        neither this page reloaded nor anyone else can show it again.
      </p>
      <dl class="pair">
        <dt>Label</dt>
        <dd id="new-label">
          ${pair.label === '' ? html`<span class="muted">(no label)</span>` : pair.label}
        </dd>
        <dt>Key id</dt>
        <dd><code id="new-key">${pair.key}</code></dd>
        <dt>Secret</dt>
        <dd>
          <code id="secret" class="secret">${secret}</code>
          <button type="button" id="copy-secret" class="secondary" data-copy="secret" hidden>
            Copy the secret
          </button>
          <span id="copy-status" role="status" aria-live="polite"></span>
        </dd>
        <dt>Expires</dt>
        <dd>${when(pair.expires_at, 'Never')}</dd>
        <dt>Scopes</dt>
        <dd>${pair.scopes.length === 0 ? 'none' : pair.scopes.join(' ')}</dd>
      </dl>
      <p>
        Use it as HTTP Basic credentials: the key id as the user name, the secret as the password.
      </p>
      <p><a class="button" href="${paths.home}" id="back-to-pairs">Back to your key pairs</a></p>`,
  );
}

/** A create or roll form sent again (a reload of the answer, a second click): no second pair. */
export function alreadySentPage(paths: PortalPaths, signedIn: SignedIn): Html {
  return page(
    { paths, title: 'This form was already sent', signedIn },
    html`<p id="already-sent">
        A create or roll form makes one key pair, once: this one was already sent (or has expired).
        A secret is shown only on the page that answered the form, never again.
      </p>
      <p>
        <a class="button" href="${paths.home}" id="back-to-pairs">Back to your key pairs</a>
        <a href="${paths.newPair}" id="new-pair">Make another key pair</a>
      </p>`,
  );
}

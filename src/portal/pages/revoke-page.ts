import type { KeyView } from '../../credentials/key-view.js';
import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { csrfField, formError, page, when, type SignedIn } from './layout.js';

export interface RevokeView {
  readonly paths: PortalPaths;
  readonly signedIn: SignedIn;
  readonly pair: KeyView;
  /** The store refused: it is the subject's last active pair; confirm with `force`. */
  readonly lastActive: boolean;
  readonly error?: string | undefined;
}

/** The confirmation of a revocation: what ends, and the form that ends it. */
export function revokePage({ paths, signedIn, pair, lastActive, error }: RevokeView): Html {
  const force = lastActive
    ? html`<p class="warning" id="last-active-warning">
          This is your last active key pair: once it is revoked, no pair of yours works on the API
          until you make a new one here.
        </p>
        <div class="check">
          <input type="checkbox" id="force" name="force" value="yes" required /><label for="force"
            >Revoke my last active key pair even so</label
          >
        </div>`
    : html``;
  return page(
    { paths, title: 'Revoke a key pair', signedIn },
    html`${formError(error)}
      <p>
        Revoking a pair ends it at once, on every gateway: requests made with it are refused from
        then on. It cannot be undone.
      </p>
      <dl class="pair">
        <dt>Label</dt>
        <dd>${pair.label === '' ? html`<span class="muted">(no label)</span>` : pair.label}</dd>
        <dt>Key id</dt>
        <dd><code id="revoke-key">${pair.key}</code></dd>
        <dt>Created</dt>
        <dd>${when(pair.created_at)}</dd>
        <dt>Last used</dt>
        <dd>${when(pair.last_used_at, 'Never')}</dd>
      </dl>
      <form method="post" action="${paths.revoke(pair.key)}" id="revoke-form" class="stack">
        ${csrfField(signedIn.csrf)} ${force}
        <button type="submit" id="confirm-revoke" class="danger">Revoke this key pair</button>
      </form>
      <p><a href="${paths.home}" id="cancel">Keep it: back to your key pairs</a></p>`,
  );
}

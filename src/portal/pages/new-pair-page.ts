import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { csrfField, formError, page, type SignedIn } from './layout.js';

/** The lifetimes the form offers, in seconds (`expires_in` of POST /keys); '' for none. */
const EXPIRY_CHOICES: readonly { readonly value: string; readonly text: string }[] = [
  { value: '', text: 'Never' },
  { value: String(86_400), text: 'In 1 day' },
  { value: String(7 * 86_400), text: 'In 7 days' },
  { value: String(30 * 86_400), text: 'In 30 days' },
  { value: String(90 * 86_400), text: 'In 90 days' },
  { value: String(365 * 86_400), text: 'In 1 year' },
];

export interface NewPairView {
  readonly paths: PortalPaths;
  readonly signedIn: SignedIn;
  /** The form's one-use token: a reload of the answer cannot make a second pair. */
  readonly nonce: string;
  /** The holder's own scopes: a new pair may carry any of them, and no other. */
  readonly scopes: readonly string[];
  /** What was sent, written back after a refusal. */
  readonly values?: {
    readonly label: string;
    readonly expiresIn: string;
    readonly scopes: readonly string[];
  };
  readonly error?: string | undefined;
}

/** The form that makes a pair: label, expiry, scopes within the holder's own. */
export function newPairPage(view: NewPairView): Html {
  const { paths, signedIn, nonce, scopes, values, error } = view;
  const chosen = values?.scopes ?? scopes;
  const scopeBoxes =
    scopes.length === 0
      ? html`<p class="muted" id="no-scopes">
          Your user holds no scopes: the pair will carry none.
        </p>`
      : html`<fieldset>
          <legend>Scopes (only your own)</legend>
          ${scopes.map(
            (scope, i) =>
              html`<div class="check">
                <input
                  type="checkbox"
                  id="scope-${i}"
                  name="scopes"
                  value="${scope}"
                  ${chosen.includes(scope) ? html` checked` : ''}
                /><label for="scope-${i}">${scope}</label>
              </div>`,
          )}
        </fieldset>`;
  const expiry = EXPIRY_CHOICES.map(
    ({ value, text }) =>
      html`<option value="${value}" ${(values?.expiresIn ?? '') === value ? html` selected` : ''}>
        ${text}
      </option>`,
  );
  return page(
    { paths, title: 'Make a new key pair', signedIn },
    html`${formError(error)}
      <form method="post" action="${paths.pairs}" id="new-pair-form" class="stack">
        ${csrfField(signedIn.csrf)}
        <input type="hidden" name="nonce" value="${nonce}" />
        <label for="label">Label <span class="muted">(optional, up to 200 characters)</span></label>
        <input
          id="label"
          name="label"
          type="text"
          maxlength="200"
          autocomplete="off"
          value="${values?.label ?? ''}"
        />
        <label for="expires_in">Expires</label>
        <select id="expires_in" name="expires_in">
          ${expiry}
        </select>
        ${scopeBoxes}
        <button type="submit" id="create-pair">Make the key pair</button>
      </form>
      <p><a href="${paths.home}" id="cancel">Back to your key pairs</a></p>`,
  );
}

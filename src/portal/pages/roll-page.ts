import type { KeyView } from '../../credentials/key-view.js';
import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { csrfField, formError, page, when, type SignedIn } from './layout.js';

/**
 * The overlaps the roll form offers, in seconds (the value sent), all within the API's bounds
 * (0 to 24 hours, credentials/key-roll.ts); the server takes none but these.
 */
export const ROLL_OVERLAPS: readonly { readonly seconds: number; readonly text: string }[] = [
  { seconds: 0, text: 'None: the old pair ends at once' },
  { seconds: 300, text: '5 minutes' },
  { seconds: 3_600, text: '1 hour' },
  { seconds: 86_400, text: '24 hours' },
];

export interface RollView {
  readonly paths: PortalPaths;
  readonly signedIn: SignedIn;
  readonly pair: KeyView;
  /** The form's one-use token (kept in the session): a second sending rolls nothing. */
  readonly nonce: string;
  /** The overlap selected, in seconds: the default (an hour) unless the form is shown again. */
  readonly overlapSec: number;
  readonly error?: string | undefined;
}

/** The roll form: what a roll does, the overlap to choose, and the button that rolls. */
export function rollPage({ paths, signedIn, pair, nonce, overlapSec, error }: RollView): Html {
  const options = ROLL_OVERLAPS.map(
    ({ seconds, text }) =>
      html`<option value="${String(seconds)}" ${seconds === overlapSec ? html`selected` : ''}>
        ${text}
      </option>`,
  );
  return page(
    { paths, title: 'Roll a key pair', signedIn },
    html`${formError(error)}
      <p>
        Rolling a pair makes a new one with the same label, scopes and expiry, and shows its secret
        once. The old pair keeps working until the end of the overlap you choose, so that its
        clients can move to the new secret; then it ends everywhere, on every gateway. It never
        works past its own expiry. If the secret may have leaked, choose no overlap.
      </p>
      <dl class="pair">
        <dt>Label</dt>
        <dd>${pair.label === '' ? html`<span class="muted">(no label)</span>` : pair.label}</dd>
        <dt>Key id</dt>
        <dd><code id="roll-key">${pair.key}</code></dd>
        <dt>Expires</dt>
        <dd>${when(pair.expires_at, 'Never')}</dd>
        <dt>Scopes</dt>
        <dd>${pair.scopes.length === 0 ? 'none' : pair.scopes.join(' ')}</dd>
      </dl>
      <form method="post" action="${paths.roll(pair.key)}" id="roll-form" class="stack">
        ${csrfField(signedIn.csrf)}
        <input type="hidden" name="nonce" value="${nonce}" />
        <label for="overlap_sec">How long the old pair keeps working</label>
        <select id="overlap_sec" name="overlap_sec">
          ${options}
        </select>
        <button type="submit" id="confirm-roll">Roll this key pair</button>
      </form>
      <p><a href="${paths.home}" id="cancel">Keep it as it is: back to your key pairs</a></p>`,
  );
}

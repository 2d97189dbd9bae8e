import type { KeyView } from '../../credentials/key-view.js';
import { html, type Html } from '../html.js';
import type { PortalPaths } from '../portal-paths.js';
import { page, when, type SignedIn } from './layout.js';

export interface PairsView {
  readonly paths: PortalPaths;
  readonly signedIn: SignedIn;
  /** One page of the holder's pairs, newest first. */
  readonly pairs: readonly KeyView[];
  /** The cursor of the next page (its `after`); undefined on the last page. */
  readonly nextAfter?: string | undefined;
  /** The page is not the first one. */
  readonly later: boolean;
  /** A sentence about the action just done (after its redirect). */
  readonly notice?: string | undefined;
}

const STATUS_TEXT = { active: 'Active', revoked: 'Revoked', expired: 'Expired' } as const;

/** One pair as a row; its actions are links to the roll page and the revoke confirmation. */
function row(paths: PortalPaths, pair: KeyView): Html {
  const name = pair.label === '' ? pair.key : pair.label;
  const actions =
    pair.status === 'active'
      ? html`<a class="button secondary" id="roll-${pair.key}" href="${paths.roll(pair.key)}"
            >Roll<span class="visually-hidden"> ${name}</span></a
          >
          <a class="button secondary" id="revoke-${pair.key}" href="${paths.revoke(pair.key)}"
            >Revoke<span class="visually-hidden"> ${name}</span></a
          >`
      : html``;
  return html`<tr id="pair-${pair.key}">
    <td data-label="Label">
      ${pair.label === '' ? html`<span class="muted">(no label)</span>` : pair.label}
    </td>
    <td data-label="Key id"><code>${pair.key}</code></td>
    <td data-label="Created">${when(pair.created_at)}</td>
    <td data-label="Expires">
      ${when(pair.expires_at, 'Never')}
      ${pair.expiring_soon ? html`<strong class="ending-soon">Ends soon</strong>` : ''}
    </td>
    <td data-label="Scopes">
      ${pair.scopes.length === 0 ? html`<span class="muted">none</span>` : pair.scopes.join(' ')}
    </td>
    <td data-label="Last used">${when(pair.last_used_at, 'Never')}</td>
    <td data-label="Status">
      <span class="status status-${pair.status}">${STATUS_TEXT[pair.status]}</span>
    </td>
    <td data-label="Actions">${actions}</td>
  </tr>`;
}

/** The holder's pairs, a page at a time, newest first, and the way to make another. */
export function pairsPage(view: PairsView): Html {
  const { paths, signedIn, pairs, nextAfter, later, notice } = view;
  const table =
    pairs.length === 0
      ? html`<p id="no-pairs">You have no key pairs${later ? ' on this page' : ''}.</p>`
      : html`<div class="table-wrap">
          <table id="pairs">
            <caption class="visually-hidden">
              Your key pairs, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Label</th>
                <th scope="col">Key id</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Scopes</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              ${pairs.map((pair) => row(paths, pair))}
            </tbody>
          </table>
        </div>`;
  const ending = pairs.filter((pair) => pair.expiring_soon).length;
  // Said once above the table too: the badge of a row is easy to miss on a phone's cards.
  const warning =
    ending === 0
      ? ''
      : html`<p class="warning" id="ending-soon">
          ${ending === 1 ? 'One of your key pairs ends' : `${ending} of your key pairs end`} within
          30 days, and then stops working. Roll each one before its end: the new pair works at once,
          beside the old one until the end you choose.
        </p>`;
  const pager = html`<nav class="pager" aria-label="Pages of key pairs">
    ${later ? html`<a id="first-page" href="${paths.home}">Newest pairs</a>` : ''}
    ${nextAfter === undefined ? '' : html`<a id="next-page" href="${paths.home}?after=${nextAfter}">Older pairs</a>`}
  </nav>`;
  return page(
    { paths, title: 'Your key pairs', signedIn },
    html`${notice === undefined ? '' : html`<p class="notice" role="status" id="notice">${notice}</p>`}
      ${warning}
      <p><a class="button" id="new-pair" href="${paths.newPair}">Make a new key pair</a></p>
      ${table} ${pager}`,
  );
}

import { describe, expect, it } from 'vitest';
import type { KeyView } from '../../../src/credentials/key-view.js';
import { alreadySentPage, createdPage } from '../../../src/portal/pages/created-page.js';
import { errorPage } from '../../../src/portal/pages/error-page.js';
import { newPairPage } from '../../../src/portal/pages/new-pair-page.js';
import { pairsPage } from '../../../src/portal/pages/pairs-page.js';
import { revokePage } from '../../../src/portal/pages/revoke-page.js';
import { ROLL_OVERLAPS, rollPage } from '../../../src/portal/pages/roll-page.js';
import { formOverlapSec } from '../../../src/portal/pair-actions.js';
import { MAX_ROLL_OVERLAP_SEC } from '../../../src/credentials/key-roll.js';
import { signInPage } from '../../../src/portal/pages/sign-in-page.js';
import { portalPaths } from '../../../src/portal/portal-paths.js';

const paths = portalPaths('/portal/');
const signedIn = { username: 'al<i>ce', csrf: 'csrf-token-123' };
const HOSTILE = `"><script>alert('x')</script>`;

const pair = (overrides: Partial<KeyView> = {}): KeyView => ({
  id: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
  key: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
  label: HOSTILE,
  status: 'active',
  created_at: '2026-11-27T19:40:12.345Z',
  expires_at: null,
  scopes: ['accounts:read'],
  last_used_at: null,
  expiring_soon: false,
  ...overrides,
});

const pages = {
  signIn: signInPage({
    paths,
    username: HOSTILE,
    error: 'The username or the password is not right.',
  }),
  pairs: pairsPage({
    paths,
    signedIn,
    pairs: [pair(), pair({ key: 'ak_old', status: 'revoked' })],
    later: false,
    nextAfter: 'ak_old',
  }),
  newPair: newPairPage({ paths, signedIn, nonce: 'nonce-1', scopes: ['accounts:read', HOSTILE] }),
  created: createdPage({ paths, signedIn, pair: pair(), secret: 'S3cr3tS3cr3t' }),
  alreadySent: alreadySentPage(paths, signedIn),
  revoke: revokePage({ paths, signedIn, pair: pair(), lastActive: true }),
  roll: rollPage({ paths, signedIn, pair: pair(), nonce: 'nonce-2', overlapSec: 3600 }),
  rollAgain: rollPage({
    paths,
    signedIn,
    pair: pair({ scopes: [HOSTILE] }),
    nonce: 'nonce-2',
    overlapSec: 0,
    error: HOSTILE,
  }),
  rolled: createdPage({
    paths,
    signedIn,
    pair: pair({ key: 'ak_new' }),
    secret: 'S3cr3tS3cr3t',
    rolled: pair({ expires_at: '2026-11-27T20:40:12.345Z' }),
  }),
  rolledAtOnce: createdPage({
    paths,
    signedIn,
    pair: pair({ key: 'ak_new' }),
    secret: 'S3cr3tS3cr3t',
    rolled: pair({ status: 'revoked' }),
  }),
  error: errorPage({ paths, status: 404, message: 'There is no such page.', requestId: 'req-1' }),
};

describe('the portal’s pages', () => {
  it('escape every value they show: no markup of a label, username or scope reaches the page', () => {
    for (const [name, page] of Object.entries(pages)) {
      expect(page.text, name).not.toContain('<script>alert');
      expect(page.text, name).not.toContain('<i>');
    }
    expect(pages.pairs.text).toContain('&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;');
  });

  it('hold no inline script or style: only the portal’s own files, as the CSP requires', () => {
    for (const [name, page] of Object.entries(pages)) {
      const scripts = [...page.text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
      expect(scripts, name).toEqual(['<script src="/portal/portal.js" defer>']);
      expect(page.text, name).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
      expect(page.text, name).toMatch(/<link rel="stylesheet" href="\/portal\/portal\.css" \/>/);
    }
  });

  it('put the session’s CSRF token in every form a signed-in page posts', () => {
    for (const page of [pages.pairs, pages.newPair, pages.created, pages.revoke, pages.roll]) {
      const forms = page.text.match(/<form\b[\s\S]*?<\/form>/g) ?? [];
      expect(forms.length).toBeGreaterThan(0);
      for (const form of forms)
        expect(form).toContain('<input type="hidden" name="csrf" value="csrf-token-123" />');
    }
  });

  it('label every field, and keep the ids the browser tests use', () => {
    for (const page of Object.values(pages)) {
      for (const [, id] of page.text.matchAll(
        /<(?:input|select)\b(?![^>]*type="hidden")[^>]*\bid="([^"]+)"/g,
      ))
        expect(page.text).toContain(`<label for="${id}"`);
    }
    expect(pages.signIn.text).toMatch(
      /id="sign-in-form"[\s\S]*name="username"[\s\S]*name="password"/,
    );
    expect(pages.newPair.text).toContain('<input type="hidden" name="nonce" value="nonce-1" />');
    expect(pages.revoke.text).toContain('id="force" name="force" value="yes" required');
  });

  it('show a new secret once as selectable text, with the warning and a copy button for script', () => {
    expect(pages.created.text).toContain('<code id="secret" class="secret">S3cr3tS3cr3t</code>');
    expect(pages.created.text).toContain('id="secret-warning"');
    expect(pages.created.text).toContain(
      'id="copy-secret" class="secondary" data-copy="secret" hidden',
    );
    for (const [name, page] of Object.entries(pages))
      if (!['created', 'rolled', 'rolledAtOnce'].includes(name))
        expect(page.text).not.toContain('S3cr3tS3cr3t');
  });

  it('list pairs with their status, times and a revoke link only for an active one', () => {
    expect(pages.pairs.text).toContain(
      '<time datetime="2026-11-27T19:40:12.345Z">2026-11-27 19:40 UTC</time>',
    );
    expect(pages.pairs.text).toContain(
      'href="/portal/keys/ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX/revoke"',
    );
    expect(pages.pairs.text).not.toContain('href="/portal/keys/ak_old/revoke"');
    expect(pages.pairs.text).toContain('<a id="next-page" href="/portal/?after=ak_old">');
  });

  it('warn of the pairs ending within 30 days, above the table and in their rows, and of no other', () => {
    const listed = (pairs: KeyView[]) => pairsPage({ paths, signedIn, pairs, later: false }).text;
    const ending = pair({
      key: 'ak_ending',
      expires_at: '2026-12-01T00:00:00.000Z',
      expiring_soon: true,
    });
    const one = listed([ending, pair({ key: 'ak_fine' })]);
    expect(one).toMatch(
      /<p class="warning" id="ending-soon">\s*One of your key pairs ends\s+within\s+30 days/,
    );
    const rows = [...one.matchAll(/<tr id="pair-([^"]+)">[\s\S]*?<\/tr>/g)];
    expect(rows.map(([row, key]) => [key, row.includes('Ends soon')])).toEqual([
      ['ak_ending', true],
      ['ak_fine', false],
    ]);
    expect(listed([ending, { ...ending, key: 'ak_ending_2' }])).toMatch(
      /2 of your key pairs end\s+within\s+30 days/,
    );
    expect(pages.pairs.text).not.toContain('ending-soon');
    expect(pages.pairs.text).not.toContain('Ends soon');
  });

  it('link an active pair to its roll page, beside the revoke link, and an ended one to neither', () => {
    expect(pages.pairs.text).toContain(
      'id="roll-ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX" href="/portal/keys/ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX/roll"',
    );
    expect(pages.pairs.text).not.toContain('/portal/keys/ak_old/roll');
  });

  it('offer the overlaps none, 5 minutes, 1 hour (the default) and 24 hours, in seconds, within the API’s bounds', () => {
    const options = [...pages.roll.text.matchAll(/<option value="(\d+)"( selected)?/g)].map(
      ([, value, selected]) => [value, selected !== undefined],
    );
    expect(options).toEqual([
      ['0', false],
      ['300', false],
      ['3600', true],
      ['86400', false],
    ]);
    expect(pages.rollAgain.text).toMatch(/<option value="0" selected/);
    for (const { seconds } of ROLL_OVERLAPS) {
      expect(seconds).toBeGreaterThanOrEqual(0);
      expect(seconds).toBeLessThanOrEqual(MAX_ROLL_OVERLAP_SEC);
    }
    expect(pages.roll.text).toContain('<label for="overlap_sec"');
    expect(pages.roll.text).toContain('<input type="hidden" name="nonce" value="nonce-2" />');
    expect(pages.roll.text).toContain(
      'action="/portal/keys/ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX/roll" id="roll-form"',
    );
    expect(pages.roll.text).toMatch(/keeps working until the end of the overlap/);
    expect(pages.rollAgain.text).toContain('id="form-error"');
  });

  it('take from the roll form only an overlap it offers', () => {
    expect(['0', '300', '3600', '86400'].map(formOverlapSec)).toEqual([0, 300, 3600, 86400]);
    for (const sent of [undefined, '', '60', '86401', '-1', '3600.0', '1e3', ' 300', 'constructor'])
      expect(formOverlapSec(sent), String(sent)).toBeUndefined();
  });

  it('answer a roll with the new secret once and the old pair’s end', () => {
    expect(pages.rolled.text).toContain('<code id="secret" class="secret">S3cr3tS3cr3t</code>');
    expect(pages.rolled.text).toContain('<code id="new-key">ak_new</code>');
    expect(pages.rolled.text).toMatch(
      /id="rolled-end">keeps working until <time datetime="2026-11-27T20:40:12.345Z">/,
    );
    expect(pages.rolledAtOnce.text).toMatch(/id="rolled-end">has ended/);
    expect(pages.created.text).not.toContain('rolled-pair');
  });

  it('show an error with its request id and the way back', () => {
    expect(pages.error.text).toContain('<h1>Not found</h1>');
    expect(pages.error.text).toContain('<code id="request-id">req-1</code>');
  });
});

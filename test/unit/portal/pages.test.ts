import { describe, expect, it } from 'vitest';
import type { KeyView } from '../../../src/credentials/key-view.js';
import { alreadySentPage, createdPage } from '../../../src/portal/pages/created-page.js';
import { errorPage } from '../../../src/portal/pages/error-page.js';
import { newPairPage } from '../../../src/portal/pages/new-pair-page.js';
import { pairsPage } from '../../../src/portal/pages/pairs-page.js';
import { revokePage } from '../../../src/portal/pages/revoke-page.js';
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
    for (const page of [pages.pairs, pages.newPair, pages.created, pages.revoke]) {
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
      if (name !== 'created') expect(page.text).not.toContain('S3cr3tS3cr3t');
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

  it('show an error with its request id and the way back', () => {
    expect(pages.error.text).toContain('<h1>Not found</h1>');
    expect(pages.error.text).toContain('<code id="request-id">req-1</code>');
  });
});

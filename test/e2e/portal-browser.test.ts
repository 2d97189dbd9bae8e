import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAxeContext, seriousViolations, type AxeViolation } from '../support/axe.js';
import { chromiumInstalled, NO_CHROMIUM, useChromium } from '../support/chromium.js';
import {
  accountsWith,
  createPair,
  cspReports,
  focused,
  newPairOf,
  PORTAL,
  revokePair,
  rollPair,
  rowOf,
  sessionCookieOf,
  signIn,
  signOut,
  startPortalDemo,
  tabTo,
  untilHeading,
  type PortalDemo,
} from '../support/portal-pages.js';

// The key holder's pages (issue 27, point 5) in a real browser: the distribution's Chromium,
// driven by playwright-core, on the built gateway started on `npm start`'s defaults (memory
// store, the demo user it prints). The whole flow with the pair used over HTTP, the attacks a
// browser makes possible (a form of another origin, a planted session cookie), the end of a
// session, keyboard-only use, and axe-core on every page. With PORTAL_SCREENSHOTS=1 it also
// saves a screenshot of each page to docs/portal/ (a normal run writes no file).

const installed = chromiumInstalled();
if (!installed) console.warn(NO_CHROMIUM);

const SCREENSHOTS = process.env.PORTAL_SCREENSHOTS === '1';
const SCREENSHOT_DIR = fileURLToPath(new URL('../../docs/portal/', import.meta.url));

describe.skipIf(!installed)("the portal in Chromium, on npm start's defaults", () => {
  const browser = useChromium();
  let demo: PortalDemo;
  let baseUrl: string;
  /** Another origin on loopback (another port): the page of a site that is not the portal. */
  let otherSite: Server;
  let otherOrigin: string;
  let labels = 0;

  beforeAll(async () => {
    demo = await startPortalDemo();
    baseUrl = demo.gateway.url;
    otherSite = createServer((req, res) => {
      // A page with a form that posts to the portal: `?action=` names where.
      const action = new URL(req.url ?? '/', 'http://x').searchParams.get('action') ?? '';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Prizes</title></head>
<body><main><h1>You won</h1><form method="post" action="${action.replace(/"/g, '&quot;')}">
<input type="hidden" name="force" value="yes"><button type="submit">Claim the prize</button>
</form></main></body></html>`);
    });
    await new Promise<void>((resolve) => otherSite.listen(0, '127.0.0.1', resolve));
    otherOrigin = `http://127.0.0.1:${(otherSite.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await demo?.gateway.stop();
    await new Promise((resolve) => otherSite?.close(resolve));
  });

  /** A label no other pair of the run has. */
  const label = (what: string): string => `${what} ${(labels += 1)}`;

  /** Runs `use` in a context of its own (a browser profile of its own), closed afterwards. */
  async function inContext<T>(
    use: (context: BrowserContext, page: Page) => Promise<T>,
    options: BrowserContextOptions = {},
  ): Promise<T> {
    const context = await browser().newContext(options);
    try {
      return await use(context, await context.newPage());
    } finally {
      await context.close();
    }
  }

  it('prints the portal and the demo user beside the bootstrap pair', () => {
    expect(demo.portalUrl).toBe(`${baseUrl}${PORTAL}`);
    expect(demo.user.username).toBe('demo');
  });

  it('signs in, lists, makes a pair that works as Basic on /accounts, revokes it: then 401', async () => {
    await inContext(async (_context, page) => {
      const blocked = cspReports(page);
      await page.goto(demo.portalUrl);
      // Signed out, the list sends the browser to the sign-in form.
      await untilHeading(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe(`${PORTAL}sign-in`);
      await signIn(page, baseUrl, demo.user);
      expect(await page.getByRole('navigation', { name: 'Account' }).innerText()).toContain(
        `Signed in as ${demo.user.username}`,
      );
      // The bootstrap pair is there already.
      expect(await page.getByRole('table').getByRole('row').count()).toBeGreaterThanOrEqual(2);

      const name = label('deploy');
      const pair = await createPair(page, name);
      expect(await page.getByRole('alert').innerText()).toMatch(/shown this once/i);
      expect((await accountsWith(baseUrl, pair)).status).toBe(200);

      await page.getByRole('link', { name: 'Back to your key pairs' }).click();
      await untilHeading(page, 'Your key pairs');
      const row = rowOf(page, pair.key);
      expect(await row.innerText()).toContain(name);
      expect(await row.innerText()).toContain('Active');
      // The list never shows a secret; nor does Back to the create answer: no-store, so the
      // browser kept no copy, and it does not send the form again on its own (Chromium shows
      // its "Confirm Form Resubmission" page, net::ERR_CACHE_MISS, instead).
      expect(await page.content()).not.toContain(pair.secret);
      const back = await page.goBack().then(
        () => 'went back',
        (error: unknown) => String(error),
      );
      expect(back).toContain('ERR_CACHE_MISS');
      await page.waitForURL((url) => url.protocol === 'chrome-error:');
      expect(await page.content()).not.toContain(pair.secret);
      await page.goto(demo.portalUrl);

      await revokePair(page, pair.key);
      expect(await page.getByRole('status').innerText()).toBe('The key pair is revoked.');
      expect(await rowOf(page, pair.key).innerText()).toContain('Revoked');
      expect((await accountsWith(baseUrl, pair)).status).toBe(401);
      // Every page above ran under the portal's CSP without breaking it.
      expect(blocked).toEqual([]);
    });
  });

  it('warns of a pair ending within 30 days, in its row and above the list, accessibly, until it is revoked', async () => {
    await inContext(async (_context, page) => {
      const blocked = cspReports(page);
      await signIn(page, baseUrl, demo.user);
      await page.getByRole('link', { name: 'Make a new key pair' }).click();
      await untilHeading(page, 'Make a new key pair');
      await page.getByLabel(/^Label/).fill(label('ending'));
      await page.getByLabel('Expires').selectOption({ label: 'In 7 days' });
      await page.getByRole('button', { name: 'Make the key pair' }).click();
      await untilHeading(page, 'Your new key pair');
      const pair = await newPairOf(page);
      await page.goto(demo.portalUrl);
      await untilHeading(page, 'Your key pairs');
      expect(await rowOf(page, pair.key).innerText()).toContain('Ends soon');
      expect(await page.locator('#ending-soon').innerText()).toMatch(
        /^One of your key pairs ends within 30 days, and then stops working\./,
      );

      // The list with the warning, checked by axe-core in a context of its own (axe needs the
      // CSP bypassed): a second session of the same user.
      const checking = await newAxeContext(browser());
      try {
        const checked = await checking.newPage();
        await signIn(checked, baseUrl, demo.user);
        await checked.locator('#ending-soon').waitFor();
        expect(await seriousViolations(checked)).toEqual([]);
      } finally {
        await checking.close();
      }

      await revokePair(page, pair.key);
      expect(await rowOf(page, pair.key).innerText()).not.toContain('Ends soon');
      expect(await page.locator('#ending-soon').count()).toBe(0);
      expect(blocked).toEqual([]);
    });
  });

  it('rolls a pair from its row: both the old and the new one work during the overlap; with none, the old one is refused at once', async () => {
    await inContext(async (_context, page) => {
      const blocked = cspReports(page);
      await signIn(page, baseUrl, demo.user);
      const old = await createPair(page, label('to roll'));
      await page.getByRole('link', { name: 'Back to your key pairs' }).click();
      await untilHeading(page, 'Your key pairs');
      const rolled = await rollPair(page, old.key, '1 hour');
      expect(await page.getByRole('alert').innerText()).toMatch(/shown this once/i);
      expect(await page.locator('#rolled-end').innerText()).toMatch(/^keeps working until /);
      expect((await accountsWith(baseUrl, rolled)).status).toBe(200);
      expect((await accountsWith(baseUrl, old)).status).toBe(200);
      await page.goto(demo.portalUrl);
      expect(await rowOf(page, rolled.key).innerText()).toContain('Active');
      expect(await page.content()).not.toContain(rolled.secret);

      const another = await createPair(page, label('to roll at once'));
      await page.goto(demo.portalUrl);
      const successor = await rollPair(page, another.key, 'None: the old pair ends at once');
      expect(await page.locator('#rolled-end').innerText()).toMatch(/^has ended/);
      expect((await accountsWith(baseUrl, another)).status).toBe(401);
      expect((await accountsWith(baseUrl, successor)).status).toBe(200);
      await page.goto(demo.portalUrl);
      expect(await rowOf(page, another.key).innerText()).toContain('Revoked');
      for (const pair of [old, rolled, successor]) await revokePair(page, pair.key);
      expect(blocked).toEqual([]);
    });
  });

  it('refuses a form posted to the portal from a page of another origin (403), and nothing changes', async () => {
    await inContext(async (_context, page) => {
      await signIn(page, baseUrl, demo.user);
      const pair = await createPair(page, label('csrf target'));
      const revokeUrl = new URL(`${PORTAL}keys/${pair.key}/revoke`, baseUrl).href;
      await page.goto(`${otherOrigin}/?action=${encodeURIComponent(revokeUrl)}`);
      // Same site as the portal (loopback, another port), so the SameSite=Strict cookie goes
      // with the form: the Origin check and the missing CSRF token are what refuse it.
      const [answer] = await Promise.all([
        page.waitForResponse((response) => response.url() === revokeUrl),
        page.getByRole('button', { name: 'Claim the prize' }).click(),
      ]);
      expect(answer.status()).toBe(403);
      await untilHeading(page, 'Not allowed');
      expect((await accountsWith(baseUrl, pair)).status).toBe(200);
      await page.goto(demo.portalUrl);
      expect(await rowOf(page, pair.key).innerText()).toContain('Active');
      await revokePair(page, pair.key);
    });
  });

  it('gives a new session id at sign-in: a cookie planted before it is not the session after', async () => {
    // Well formed (the user's shard tag, a dot, 43 base64url characters), known to the attacker.
    const planted = `00000.${'A'.repeat(43)}`;
    await inContext(async (context, page) => {
      await context.addCookies([{ name: 'ag_session', value: planted, url: baseUrl }]);
      await signIn(page, baseUrl, demo.user);
      const cookie = await sessionCookieOf(context, baseUrl);
      expect(cookie?.value).toMatch(/^[0-9a-f]{5}\.[A-Za-z0-9_-]{43}$/);
      expect(cookie?.value).not.toBe(planted);
      expect([cookie?.httpOnly, cookie?.sameSite]).toEqual([true, 'Strict']);
    });
    // The planted value opens nothing: the attacker's browser is sent to sign in.
    await inContext(async (context, page) => {
      await context.addCookies([{ name: 'ag_session', value: planted, url: baseUrl }]);
      await page.goto(demo.portalUrl);
      await untilHeading(page, 'Sign in');
    });
  });

  it('ends the session on sign-out: the old cookie no longer opens the list', async () => {
    const old = await inContext(async (context, page) => {
      await signIn(page, baseUrl, demo.user);
      const cookie = await sessionCookieOf(context, baseUrl);
      await signOut(page);
      expect(await sessionCookieOf(context, baseUrl)).toBeUndefined();
      await page.goto(demo.portalUrl);
      await untilHeading(page, 'Sign in');
      return cookie;
    });
    expect(old).toBeDefined();
    await inContext(async (context, page) => {
      await context.addCookies([{ name: old?.name ?? '', value: old?.value ?? '', url: baseUrl }]);
      await page.goto(demo.portalUrl);
      await untilHeading(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe(`${PORTAL}sign-in`);
    });
  });

  it('is usable with the keyboard alone: Tab to the fields, type, Enter submits, the list reachable', async () => {
    await inContext(async (_context, page) => {
      await page.goto(`${baseUrl}${PORTAL}sign-in`);
      await tabTo(page, /^- textbox "Username"/);
      await page.keyboard.type(demo.user.username);
      await page.keyboard.press('Tab');
      expect(await focused(page)).toMatch(/^- textbox "Password"/);
      await page.keyboard.type(demo.user.password);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Your key pairs');

      await tabTo(page, /^- link "Make a new key pair"/);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Make a new key pair');
      const name = label('keyboard');
      await tabTo(page, /^- textbox "Label/);
      await page.keyboard.type(name);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Your new key pair');
      const pair = await newPairOf(page);
      expect((await accountsWith(baseUrl, pair)).status).toBe(200);

      await tabTo(page, /^- link "Back to your key pairs"/);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Your key pairs');
      // The pair's own action in the list, reached by Tab alone.
      await tabTo(page, new RegExp(`^- link "Revoke ${name}"`), 40);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Revoke a key pair');
      await tabTo(page, /^- button "Revoke this key pair"/);
      await page.keyboard.press('Enter');
      await untilHeading(page, 'Your key pairs');
      expect(await rowOf(page, pair.key).innerText()).toContain('Revoked');
      expect((await accountsWith(baseUrl, pair)).status).toBe(401);
    });
  });

  /**
   * Walks through every page of the portal in `page`, calling `visit` on each with its name:
   * sign-in, the list, the create form, its answer, the roll form, its answer, the revoke
   * confirmation, the list after the revocation, an error page.
   */
  async function everyPage(page: Page, visit: (name: string) => Promise<void>): Promise<void> {
    await page.goto(`${baseUrl}${PORTAL}sign-in`);
    await visit('sign-in');
    await signIn(page, baseUrl, demo.user);
    await visit('pairs');
    await page.getByRole('link', { name: 'Make a new key pair' }).click();
    await untilHeading(page, 'Make a new key pair');
    await visit('new-pair');
    await page.getByLabel(/^Label/).fill(label('every page'));
    await page.getByRole('button', { name: 'Make the key pair' }).click();
    await untilHeading(page, 'Your new key pair');
    await visit('created');
    const made = await newPairOf(page);
    await page.goto(demo.portalUrl);
    await rowOf(page, made.key).getByRole('link', { name: /^Roll/ }).click();
    await untilHeading(page, 'Roll a key pair');
    await visit('roll');
    await page.getByRole('button', { name: 'Roll this key pair' }).click();
    await untilHeading(page, 'Your new key pair');
    await visit('rolled');
    const pair = await newPairOf(page);
    await page.goto(demo.portalUrl);
    await revokePair(page, made.key);
    await rowOf(page, pair.key)
      .getByRole('link', { name: /^Revoke/ })
      .click();
    await untilHeading(page, 'Revoke a key pair');
    await visit('revoke');
    await page.getByRole('button', { name: 'Revoke this key pair' }).click();
    await untilHeading(page, 'Your key pairs');
    await visit('revoked');
    const missing = await page.goto(`${baseUrl}${PORTAL}no-such-page`);
    expect(missing?.status()).toBe(404);
    await untilHeading(page, 'Not found');
    await visit('error');
  }

  it('has no serious or critical accessibility violation (axe-core) on any page', async () => {
    const found: Record<string, AxeViolation[]> = {};
    const context = await newAxeContext(browser());
    try {
      const page = await context.newPage();
      await everyPage(page, async (name) => {
        found[name] = await seriousViolations(page);
      });
    } finally {
      await context.close();
    }
    expect(Object.keys(found)).toEqual([
      'sign-in',
      'pairs',
      'new-pair',
      'created',
      'roll',
      'rolled',
      'revoke',
      'revoked',
      'error',
    ]);
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((name) => [name, []])));
  });

  it.runIf(SCREENSHOTS)(
    'saves a screenshot of each page to docs/portal/ (PORTAL_SCREENSHOTS=1)',
    async () => {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const PHONE = { width: 390, height: 844 };
      const DESKTOP = { width: 1280, height: 800 };
      await inContext(
        async (_context, page) => {
          await everyPage(page, async (name) => {
            await page.screenshot({ path: `${SCREENSHOT_DIR}${name}-1280.png`, fullPage: true });
            if (name !== 'sign-in' && name !== 'pairs') return;
            await page.setViewportSize(PHONE);
            await page.screenshot({ path: `${SCREENSHOT_DIR}${name}-390.png`, fullPage: true });
            await page.setViewportSize(DESKTOP);
          });
        },
        { viewport: DESKTOP },
      );
    },
  );
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAxeContext, seriousViolations } from '../support/axe.js';
import { chromiumInstalled, NO_CHROMIUM, useChromium } from '../support/chromium.js';

// The browser tests' own tools, on pages of this file's own: the distribution's Chromium
// starts headless through playwright-core, opens a page served on loopback, and axe-core
// checks it, finding nothing on a sound page and what is wrong on a broken one (so a clean
// result of the portal's pages means axe ran, not that it was never injected).

const installed = chromiumInstalled();
if (!installed) console.warn(NO_CHROMIUM);

const PAGES: Readonly<Record<string, string>> = {
  '/sound': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sound</title></head>
<body><main><h1>A sound page</h1><form><label for="name">Name</label><input id="name" name="name">
<button type="submit">Send</button></form></main></body></html>`,
  // An image without alternative text and a button without a name: both critical to axe.
  '/broken': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Broken</title></head>
<body><main><h1>A broken page</h1><img src="/none.png"><button type="button"></button></main></body></html>`,
};

describe.skipIf(!installed)('Chromium and axe-core on a loopback page', () => {
  const browser = useChromium();
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const page = PAGES[req.url ?? ''];
      res.writeHead(page === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('opens a page in headless Chromium and finds its elements by role and label', async () => {
    const context = await browser().newContext();
    try {
      const page = await context.newPage();
      const answer = await page.goto(`${baseUrl}/sound`);
      expect(answer?.status()).toBe(200);
      expect(await page.title()).toBe('Sound');
      await page.getByLabel('Name').fill('Ada');
      expect(await page.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('Ada');
      expect(browser().version()).toMatch(/^\d+\./);
    } finally {
      await context.close();
    }
  });

  it('finds no serious or critical violation on a sound page, and the critical ones of a broken page', async () => {
    const context = await newAxeContext(browser());
    try {
      const page = await context.newPage();
      await page.goto(`${baseUrl}/sound`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.goto(`${baseUrl}/broken`);
      const found = await seriousViolations(page);
      expect(found.map((violation) => violation.id).sort()).toEqual(['button-name', 'image-alt']);
      expect(found.every((violation) => violation.impact === 'critical')).toBe(true);
    } finally {
      await context.close();
    }
  });
});

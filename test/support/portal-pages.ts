import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { startGateway, type GatewayProcess } from './gateway-process.js';
import { within } from './within.js';

// The key holder's pages (docs/portal.md) driven in a real browser. Elements are found by
// their role and accessible name, or by their label, as a person (or a screen reader) finds
// them, never by an id or a class: a test then breaks when a page stops saying what it does,
// not when its markup moves.

/** The portal's base path on the gateway's defaults. */
export const PORTAL = '/portal/';

/** A web-app user's sign-in. */
export interface PortalUser {
  readonly username: string;
  readonly password: string;
}

/** A pair as its create answer shows it, the only time the secret is shown. */
export interface NewPair {
  readonly key: string;
  readonly secret: string;
}

/** `npm start`'s configuration: the embedded default the CLI serves without --config. */
const EMBEDDED_DEFAULT = readFileSync(
  new URL('../../config/gateway.yaml', import.meta.url),
  'utf8',
);

/** The printed sign-in of the portal's demo user (src/lifecycle/serve-one-process.ts). */
const DEMO_SIGN_IN =
  /the portal,.*\n\s+open:\s+(\S+)\n\s+username:\s+(\S+)\n\s+password:\s+(\S+)\n/;

export interface PortalDemo {
  readonly gateway: GatewayProcess;
  /** The URL the gateway printed for the portal. */
  readonly portalUrl: string;
  readonly user: PortalUser;
}

/**
 * The built gateway on `npm start`'s defaults (the embedded config/gateway.yaml: memory store,
 * a demo pair and a demo web-app user made at start, the built-in accounts upstream) on a
 * loopback port of its own, and the demo user's sign-in as it prints it.
 */
export async function startPortalDemo(): Promise<PortalDemo> {
  const gateway = await startGateway(EMBEDDED_DEFAULT, [], { GATEWAY_ADMIN_PORT: '0' });
  const printed = await within(
    10_000,
    'the portal sign-in the gateway prints',
    new Promise<RegExpExecArray>((resolve) => {
      const check = (): void => {
        const found = DEMO_SIGN_IN.exec(gateway.output());
        if (found === null) return;
        gateway.child.stderr?.off('data', check);
        gateway.child.stdout?.off('data', check);
        resolve(found);
      };
      gateway.child.stderr?.on('data', check);
      gateway.child.stdout?.on('data', check);
      check();
    }),
  );
  const [, portalUrl = '', username = '', password = ''] = printed;
  return { gateway, portalUrl, user: { username, password } };
}

const run = promisify(execFile);

/**
 * `GET /accounts` with the pair as Basic credentials, sent by curl as the README's line sends
 * it (`curl -u key:secret`): the status it got.
 */
export async function accountsWith(baseUrl: string, pair: NewPair): Promise<{ status: number }> {
  const { stdout } = await run('curl', [
    '--silent',
    '--output',
    '/dev/null',
    '--write-out',
    '%{http_code}',
    '--user',
    `${pair.key}:${pair.secret}`,
    new URL('/accounts', baseUrl).href,
  ]);
  return { status: Number(stdout) };
}

/** The page's `<h1>` named `name` (exactly), once it is there (after a navigation, say). */
export function untilHeading(page: Page, name: string): Promise<void> {
  return page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
}

/** Opens the sign-in page of the gateway at `baseUrl`, signs in, and waits for the list. */
export async function signIn(page: Page, baseUrl: string, user: PortalUser): Promise<void> {
  await page.goto(new URL(`${PORTAL}sign-in`, baseUrl).href);
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await untilHeading(page, 'Your key pairs');
}

/**
 * From the list: opens the create form, makes a pair labelled `label` (the other fields as
 * the form offers them), and reads its key and secret off the answer.
 */
export async function createPair(page: Page, label: string): Promise<NewPair> {
  await page.getByRole('link', { name: 'Make a new key pair' }).click();
  await untilHeading(page, 'Make a new key pair');
  await page.getByLabel(/^Label/).fill(label);
  await page.getByRole('button', { name: 'Make the key pair' }).click();
  await untilHeading(page, 'Your new key pair');
  return newPairOf(page);
}

/** The key and secret of the create answer on `page` (its description list). */
export async function newPairOf(page: Page): Promise<NewPair> {
  const shown = await describedValues(page);
  const key = firstWord(shown.get('Key id'));
  const secret = firstWord(shown.get('Secret'));
  if (key === '' || secret === '')
    throw new Error(`no key id or secret on the page: ${JSON.stringify([...shown])}`);
  return { key, secret };
}

/** The terms of the page's description lists and the text of what each describes. */
async function describedValues(page: Page): Promise<Map<string, string>> {
  const terms = await page.getByRole('term').allInnerTexts();
  const values = await page.getByRole('definition').allInnerTexts();
  return new Map(terms.map((term, i) => [term.trim(), values[i] ?? '']));
}

/** The first word of a value (a code, before a button beside it). */
function firstWord(text: string | undefined): string {
  return text?.trim().split(/\s+/)[0] ?? '';
}

/** The list's row of the pair `key`. */
export function rowOf(page: Page, key: string): Locator {
  return page.getByRole('row').filter({ hasText: key });
}

/**
 * From the list: opens the pair's revoke confirmation and confirms it, ticking the box the
 * portal asks for when it is the subject's last active pair; waits for the list again.
 */
export async function revokePair(page: Page, key: string): Promise<void> {
  await rowOf(page, key)
    .getByRole('link', { name: /^Revoke/ })
    .click();
  await untilHeading(page, 'Revoke a key pair');
  await page.getByRole('button', { name: 'Revoke this key pair' }).click();
  const list = page.getByRole('heading', { level: 1, name: 'Your key pairs', exact: true });
  const lastOne = page.getByRole('checkbox', { name: /last active/i });
  await list.or(lastOne).first().waitFor();
  if ((await lastOne.count()) > 0) {
    await lastOne.check();
    await page.getByRole('button', { name: 'Revoke this key pair' }).click();
    await list.waitFor();
  }
}

/**
 * From the list: opens the pair's roll page, chooses the overlap by its text in the select
 * (`None…`, `5 minutes`, `1 hour`, `24 hours`), rolls, and reads the successor off the answer.
 */
export async function rollPair(page: Page, key: string, overlap: string): Promise<NewPair> {
  await rowOf(page, key).getByRole('link', { name: /^Roll/ }).click();
  await untilHeading(page, 'Roll a key pair');
  await page.getByLabel('How long the old pair keeps working').selectOption({ label: overlap });
  await page.getByRole('button', { name: 'Roll this key pair' }).click();
  await untilHeading(page, 'Your new key pair');
  return newPairOf(page);
}

/** Signs out with the button every signed-in page has; waits for the sign-in form. */
export async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await untilHeading(page, 'Sign in');
}

/** The session cookie the context holds for `baseUrl`, if any (`ag_session` on plain HTTP). */
export async function sessionCookieOf(
  context: BrowserContext,
  baseUrl: string,
): Promise<{ name: string; value: string; httpOnly: boolean; sameSite: string } | undefined> {
  const cookies = await context.cookies(baseUrl);
  return cookies.find((cookie) => /(^|-)ag_session$/.test(cookie.name));
}

/**
 * The element that has the keyboard focus, as the accessibility tree names it (its ARIA
 * snapshot: `- textbox "Username"`, `- link "Make a new key pair"`); '' when none has.
 */
export async function focused(page: Page): Promise<string> {
  const element = page.locator(':focus');
  if ((await element.count()) === 0) return '';
  return element.ariaSnapshot();
}

/**
 * Presses Tab until the focused element's snapshot matches `wanted` (at most `tabs` times):
 * what a keyboard user does to reach a field or a link. Fails naming the stops it made.
 */
export async function tabTo(page: Page, wanted: RegExp, tabs = 20): Promise<void> {
  const stops: string[] = [];
  for (let i = 0; i < tabs; i += 1) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    if (wanted.test(now)) return;
    stops.push(now.split('\n')[0] ?? '');
  }
  throw new Error(`${String(wanted)} not reached in ${tabs} Tabs; the stops: ${stops.join(' | ')}`);
}

/**
 * Collects what the browser reports of the page's Content-Security-Policy being broken (a
 * blocked inline script or style): the portal's pages must need no exception to it.
 */
export function cspReports(page: Page): string[] {
  const reports: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) reports.push(message.text());
  });
  return reports;
}

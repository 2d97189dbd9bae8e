import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';

/** axe-core's browser build, read once: injected into each page checked. */
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

/** One rule an axe run found broken, with where (CSS selectors of the offending elements). */
export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: readonly string[];
}

/** What this file uses of the `axe` global that axe.min.js defines in the page. */
interface AxeGlobal {
  axe: {
    run(options: { resultTypes: string[] }): Promise<{
      violations: {
        id: string;
        impact?: string | null;
        help: string;
        nodes: { target: unknown[] }[];
      }[];
    }>;
  };
}

/**
 * A browser context whose pages may be checked with seriousViolations. `bypassCSP`: the
 * portal's Content-Security-Policy allows no inline script (script-src 'self'), and axe-core
 * goes into the page as an inline script tag. The bypass is for the accessibility check only:
 * the tests of the pages' behaviour run in contexts that keep the CSP (and count its
 * violations).
 */
export function newAxeContext(
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  return browser.newContext({ ...options, bypassCSP: true });
}

/**
 * Runs axe-core on the page as it is now (the whole document, every rule axe runs by
 * default: WCAG 2.x A and AA, and best practices) and returns the violations whose impact is
 * serious or critical. The page must belong to a context from newAxeContext.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const { axe } = globalThis as unknown as AxeGlobal;
    const results = await axe.run({ resultTypes: ['violations'] });
    return results.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact ?? null,
      help: violation.help,
      targets: violation.nodes.map((node) => JSON.stringify(node.target)),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

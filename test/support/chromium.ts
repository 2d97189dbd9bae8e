import { accessSync, constants } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { removeTempDir, tempDir } from './temp-dirs.js';

/**
 * The browser the browser tests drive: the distribution's Chromium (Debian's package
 * `chromium`, which .ci/run installs when it is missing), never one playwright downloads
 * (playwright-core downloads nothing). `CHROMIUM_PATH` names another executable.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether CHROMIUM_PATH is an executable file here. */
export function chromiumInstalled(): boolean {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a browser test file is skipped, printed once by the file (CI installs Chromium, so
 * there the files run).
 */
export const NO_CHROMIUM = `browser tests skipped: no executable Chromium at ${CHROMIUM_PATH} (apt-get install chromium, as .ci/run does; or set CHROMIUM_PATH)`;

/**
 * Launches headless Chromium once for the enclosing describe (or file) in beforeAll and closes
 * it in afterAll; call the returned function inside tests for the browser.
 *
 * `--no-sandbox`: the tests run as root (CI does), and Chromium refuses to start its sandbox as
 * root. The pages it opens are the gateway's own and the tests' own, all on loopback.
 *
 * Chromium and playwright write a profile and artifacts folder into the temp directory;
 * they are pointed at a folder of this file's own (support/temp-dirs), so that nothing they
 * might leave stays in the run's temp directory, which the run checks empty at its end.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    dir = tempDir('chromium-');
    const runTmp = process.env.TMPDIR;
    // playwright-core makes its folders under os.tmpdir(), which reads TMPDIR on each call.
    process.env.TMPDIR = dir;
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM_PATH,
        headless: true,
        args: ['--no-sandbox'],
        env: { ...process.env, TMPDIR: dir },
      });
    } finally {
      if (runTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = runTmp;
    }
  });
  afterAll(async () => {
    await browser?.close();
    if (dir !== undefined) removeTempDir(dir);
  });
  return () => {
    if (browser === undefined) throw new Error('Chromium is not running (beforeAll failed?)');
    return browser;
  };
}

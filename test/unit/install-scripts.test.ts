import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// npm 11 asks that every dependency's install script be allowed or denied in package.json's
// allowScripts (`npm install-scripts approve|deny`), else `npm ci` warns about each one (and
// a later npm skips them). bcrypt's must stay allowed: on a platform it ships no prebuilt
// binary for, that script compiles one.

const read = (file: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'));

const manifest = read('package.json') as { allowScripts?: Record<string, boolean> };
const lock = read('package-lock.json') as {
  packages: Record<string, { hasInstallScript?: boolean }>;
};

describe('allowScripts in package.json', () => {
  it('names every locked dependency that has an install script, and nothing else', () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(Object.keys(manifest.allowScripts ?? {}).sort()).toEqual(
      [...new Set(withScripts)].sort(),
    );
  });

  it("allows bcrypt's, which builds the binding where no prebuilt one fits", () => {
    expect(manifest.allowScripts?.bcrypt).toBe(true);
  });
});

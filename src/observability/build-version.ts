import { readFileSync } from 'node:fs';

/**
 * The gateway's version, package.json's `version` (dist/ and src/ both sit one folder below
 * it), read once at start for gateway_build_info; `unknown` when the file is not there.
 */
export function buildVersion(): string {
  try {
    const manifest = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

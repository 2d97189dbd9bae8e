import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILD_STAMP, staleDistReason } from '../../.ci/build.js';
import { tempDir } from '../support/temp-dirs.js';

// What `npm start` and `npm test` (build --if-stale) and the end-to-end tests' global setup
// (support/dist-setup.ts) read to tell a dist/ built from today's src/ from an older one.

const HOUR_MS = 3_600_000;

/** A project whose files are dated `ageMs` ago each, and a stamp when `stampAgeMs` is given. */
function project(files: Record<string, number>, stampAgeMs?: number): string {
  const root = tempDir('build-freshness-');
  const write = (path: string, ageMs: number) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), '');
    const at = new Date(Date.now() - ageMs);
    utimesSync(join(root, path), at, at);
  };
  for (const [path, ageMs] of Object.entries(files)) write(path, ageMs);
  if (stampAgeMs !== undefined) write(BUILD_STAMP, stampAgeMs);
  return root;
}

describe('staleDistReason', () => {
  it('finds nothing stale when the last finished build is newer than every file it reads', () => {
    const root = project(
      { 'src/app.ts': 3 * HOUR_MS, 'src/a/b.lua': 2 * HOUR_MS, 'tsconfig.json': 5 * HOUR_MS },
      HOUR_MS,
    );
    expect(staleDistReason(root)).toBeUndefined();
  });

  it('names the newest file of src/ changed after the last build', () => {
    const root = project(
      { 'src/app.ts': 3 * HOUR_MS, 'src/deep/er/b.lua': 0, 'src/c.ts': HOUR_MS / 2 },
      HOUR_MS,
    );
    expect(staleDistReason(root)).toBe(
      'dist/ is older than src/ (src/deep/er/b.lua changed after the last build)',
    );
  });

  it('counts tsconfig.json, which the build reads too', () => {
    const root = project({ 'src/app.ts': 3 * HOUR_MS, 'tsconfig.json': 0 }, HOUR_MS);
    expect(staleDistReason(root)).toBe(
      'dist/ is older than src/ (tsconfig.json changed after the last build)',
    );
  });

  it('says when there is no dist/, or no record of a build that finished', () => {
    expect(staleDistReason(project({ 'src/app.ts': HOUR_MS }))).toBe('there is no dist/');
    expect(staleDistReason(project({ 'src/app.ts': HOUR_MS, 'dist/app.js': 0 }))).toBe(
      'dist/ has no record of a finished build',
    );
  });
});

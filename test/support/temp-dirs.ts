import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Folders tempDir made in this test file and not yet removed. */
const made = new Set<string>();

/**
 * A new folder in the temp directory, removed by removeTempDir or, at the latest, after the
 * test file (./remove-temp-dirs.ts, a setup file of every test file).
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}

/** Removes every folder tempDir made that is still there. */
export function removeTempDirs(): void {
  for (const dir of made) removeTempDir(dir);
}

import { describe, expect, it } from 'vitest';
import { LAYERS } from '../../../.ci/import-layers.js';
import { readDoc, section } from '../../support/markdown.js';

// docs/ARCHITECTURE.md's map is the lint rule in words: a folder missing from it, or an import
// the rule allows and the map does not say (or the other way round), is a map that misleads.

/** The map's rows: folder -> the folders it may import, as the table names them. */
function mapped(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of section(readDoc('docs/ARCHITECTURE.md'), '## Architecture').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const folder = /^`([a-z/-]+)\/`$/.exec(cells[1] ?? '')?.[1];
    if (folder === undefined) continue;
    const imports = cells[3] ?? '';
    rows.set(
      folder,
      imports === 'nothing of ours'
        ? []
        : imports.split(', ').map((name) => (name === 'app.ts' ? '<root>' : name)),
    );
  }
  return rows;
}

describe("docs/ARCHITECTURE.md's code map", () => {
  it('names every folder of the import rule with the folders it may import, and only those', () => {
    const rule = Object.fromEntries(
      Object.entries(LAYERS).map(([folder, imports]) => [folder, [...imports].sort()]),
    );
    const map = Object.fromEntries(
      [...mapped()].map(([folder, imports]) => [folder, [...imports].sort()]),
    );
    expect(map).toEqual(rule);
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { LAYERS, NESTED_ROOMS } from '../../../.ci/import-layers.js';
import { readDoc, section } from '../../support/markdown.js';

// docs/ARCHITECTURE.md's map is the lint rule in words, and the code in words: a folder missing
// from it, an import the rule allows and the map does not say (or the other way round), or an
// import the code makes and the map does not name (or names and the code never makes), is a
// map that misleads.

/** A row of the map: what the room imports, and what else the rule lets it import. */
interface MapRow {
  readonly imports: readonly string[];
  readonly alsoAllowed: readonly string[];
}

const ALSO = '; may also import ';

/** `errors, identity` -> its folders (`app.ts` is the root files' room); `nothing of ours` -> none. */
function folderList(cell: string): string[] {
  if (cell === '' || cell === 'nothing of ours') return [];
  return cell.split(', ').map((name) => (name === 'app.ts' ? '<root>' : name));
}

/** The map's rows: folder -> its row, as the table names them. */
function mapped(): Map<string, MapRow> {
  const rows = new Map<string, MapRow>();
  for (const line of section(readDoc('docs/ARCHITECTURE.md'), '## Architecture').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const folder = /^`([a-z/-]+)\/`$/.exec(cells[1] ?? '')?.[1];
    if (folder === undefined) continue;
    const [imports = '', alsoAllowed = ''] = (cells[3] ?? '').split(ALSO);
    rows.set(folder, { imports: folderList(imports), alsoAllowed: folderList(alsoAllowed) });
  }
  return rows;
}

const srcRoot = fileURLToPath(new URL('../../../src', import.meta.url));

/** The room of src/ a path lies in (as .ci/import-layers.ts reads it); `<root>` for src/ itself. */
function roomOf(path: string): string {
  const parts = relative(srcRoot, path).split(sep);
  if (parts.length === 1) return '<root>';
  const [top = '', sub = ''] = parts;
  return NESTED_ROOMS.includes(top) && parts.length > 2 ? `${top}/${sub}` : top;
}

/**
 * What each room of src/ imports of the others, read from its files: every import, type-only
 * or dynamic, and every re-export; with one file that makes each import, for the message.
 */
function actualImports(): Map<string, Map<string, string>> {
  const rooms = new Map<string, Map<string, string>>();
  const files = readdirSync(srcRoot, { recursive: true, encoding: 'utf8' }).filter((file) =>
    file.endsWith('.ts'),
  );
  for (const file of files) {
    const path = resolve(srcRoot, file);
    const from = roomOf(path);
    const imports = rooms.get(from) ?? new Map<string, string>();
    rooms.set(from, imports);
    const { importedFiles } = ts.preProcessFile(readFileSync(path, 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = roomOf(resolve(dirname(path), fileName));
      if (to !== from && !imports.has(to)) imports.set(to, `src/${file}`);
    }
  }
  return rooms;
}

describe("docs/ARCHITECTURE.md's code map", () => {
  it('names every folder of the import rule with the folders it may import, and only those', () => {
    const rule = Object.fromEntries(
      Object.entries(LAYERS).map(([folder, imports]) => [folder, [...imports].sort()]),
    );
    const map = Object.fromEntries(
      [...mapped()].map(([folder, row]) => [folder, [...row.imports, ...row.alsoAllowed].sort()]),
    );
    expect(map).toEqual(rule);
  });

  it('names, for every folder of src/, the folders its files import, and only those', () => {
    const rows = mapped();
    const wrong: string[] = [];
    for (const [room, imports] of actualImports()) {
      if (room === '<root>') continue;
      const row = rows.get(room);
      if (row === undefined) {
        wrong.push(`src/${room}/ has no row in the map`);
        continue;
      }
      for (const [to, file] of imports)
        if (!row.imports.includes(to))
          wrong.push(
            `${room}/ imports ${to} (${file}), which its row does not list` +
              (row.alsoAllowed.includes(to) ? ` (only under "may also import")` : ''),
          );
      for (const to of row.imports)
        if (!imports.has(to))
          wrong.push(
            `the map says ${room}/ imports ${to}, but no file of src/${room}/ does: move it after "${ALSO.slice(2).trim()}", or drop it`,
          );
    }
    expect(wrong).toEqual([]);
  });
});

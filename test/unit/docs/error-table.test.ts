import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../src/errors/error-codes.js';
import { readDoc, section } from '../../support/markdown.js';

// docs/api.md's Errors table is what a client codes against: every code of the catalogue,
// with its status, and nothing else.

/** The table under `## Errors`: `code status` per row. */
function documented(): string[] {
  return section(readDoc('docs/api.md'), '## Errors')
    .split('\n')
    .flatMap((line) => {
      const row = /^\|\s*(\d{3})\s*\|\s*`([a-z_]+)`/.exec(line);
      return row === null ? [] : [`${row[2]} ${row[1]}`];
    });
}

describe("docs/api.md's Errors", () => {
  it('lists every code of the catalogue with its status, and only those', () => {
    const catalogue = Object.entries(ERROR_CATALOGUE).map(
      ([code, { status }]) => `${code} ${status}`,
    );
    expect(documented().sort()).toEqual(catalogue.sort());
  });
});

import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { configSchema } from '../../../src/config/config-schema.js';
import { readDoc, section } from '../../support/markdown.js';

// docs/configuration.md's Reference is prose beside a schema (issue 17): held against it here,
// every key of the schema is in the table, every key of the table is in the schema, and a
// default the table gives as a value is the schema's.

/** A JSON Schema node, as much of it as the walk reads. */
interface Node {
  readonly properties?: Record<string, Node>;
  readonly additionalProperties?: Node | boolean;
  readonly items?: Node;
  readonly anyOf?: readonly Node[];
  readonly oneOf?: readonly Node[];
  readonly allOf?: readonly Node[];
  readonly default?: unknown;
}

/** A map's key or a placeholder, whatever the table calls it (`<name>`, `<subject>`). */
const normalize = (path: string): string => path.replace(/<[^>]*>/g, '<>');

/** Every key path of the schema (`a.b`, `routes[].name`, `upstreams.<>.url`) and its default. */
function schemaKeys(io: 'input' | 'output'): Map<string, unknown> {
  const keys = new Map<string, unknown>();
  const walk = (node: Node, path: string): void => {
    for (const branch of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
      walk(branch, path);
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const key = path === '' ? name : `${path}.${name}`;
      if (!keys.has(key) || keys.get(key) === undefined) keys.set(key, child.default);
      walk(child, key);
    }
    if (typeof node.additionalProperties === 'object')
      walk(node.additionalProperties, `${path}.<>`);
    if (node.items !== undefined) walk(node.items, `${path}[]`);
  };
  walk(z.toJSONSchema(configSchema, { io, unrepresentable: 'any' }) as Node, '');
  return keys;
}

const OUTPUT = schemaKeys('output');
const INPUT = schemaKeys('input');
/** The schema's default of a key: the parsed value's, else (a map or list given whole) the file's. */
const schemaDefault = (key: string): unknown => OUTPUT.get(key) ?? INPUT.get(key);
/** Keys with no key below them: what a file sets. */
const LEAVES = [...OUTPUT.keys()].filter(
  (key) =>
    ![...OUTPUT.keys()].some(
      (other) => other.startsWith(`${key}.`) || other.startsWith(`${key}[]`),
    ),
);

interface Row {
  /** The keys the row names, which its default is of. */
  readonly keys: readonly string[];
  /** The fields of a list's items its type names (`{key, secretHash, …}`). */
  readonly fields: readonly string[];
  readonly defaultCell: string;
}

/** The Reference table's rows: a row's keys (`a.b`, `.c` = a sibling of the first) and default. */
function referenceRows(): Row[] {
  return section(readDoc('docs/configuration.md'), '### Reference')
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [keyCell = '', typeCell = '', defaultCell = ''] = line
        .split(/(?<!\\)\|/)
        .slice(1)
        .map((cell) => cell.trim());
      const spans = [...keyCell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
      const [first = '', ...rest] = spans.map(normalize);
      const parent = first.slice(0, first.lastIndexOf('.'));
      const keys = [first, ...rest.map((sibling) => parent + sibling)];
      // A list of records written whole: `{key, secretHash, …}` names its items' fields.
      const fields = /`\{(.*)\}`/.exec(typeCell)?.[1]?.split(',') ?? [];
      return { keys, fields: fields.map((field) => `${first}[].${field.trim()}`), defaultCell };
    });
}

const ROWS = referenceRows();
const DOCUMENTED = new Set(ROWS.flatMap((row) => [...row.keys, ...row.fields]));

/**
 * Whether `text`, a default cell's one code span, is `actual`: as written (`ag:`, `{ag}:`) or
 * read as YAML (`8080`, `[GET, HEAD]`, `{accounts: {url: builtin}}`).
 */
function sameDefault(text: string, actual: unknown): boolean {
  if (text === String(actual)) return true;
  try {
    return isDeepStrictEqual(parse(text), actual);
  } catch {
    return false;
  }
}

describe("docs/configuration.md's Reference", () => {
  it('names every key a configuration file can set', () => {
    expect(LEAVES.filter((key) => !DOCUMENTED.has(key))).toEqual([]);
  });

  it('names only keys the schema has', () => {
    expect([...DOCUMENTED].filter((key) => !OUTPUT.has(key))).toEqual([]);
  });

  it("gives the schema's default wherever it states one as a value", () => {
    const wrong = ROWS.flatMap(({ keys, defaultCell }) => {
      const stated = /^`([^`]+)`$/.exec(defaultCell)?.[1];
      if (stated === undefined) return [];
      return keys
        .filter((key) => !sameDefault(stated, schemaDefault(key)))
        .map((key) => `${key}: ${stated}, schema ${JSON.stringify(schemaDefault(key))}`);
    });
    expect(wrong).toEqual([]);
  });

  it('reads enough of the table to mean something', () => {
    expect(ROWS.length).toBeGreaterThan(100);
    expect(schemaDefault('server.port')).toBe(8080);
  });
});

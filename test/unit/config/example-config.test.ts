import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema } from '../../../src/config/config-schema.js';
import { loadConfigFile, parseConfig } from '../../../src/config/load-config.js';

// config/gateway.example.yaml promises every key with its default value. These tests keep
// it from drifting from the schema: a key added to the schema without a line in the example
// (set, or commented out) fails here.

const EXAMPLE = fileURLToPath(new URL('../../../config/gateway.example.yaml', import.meta.url));

/**
 * Every key path the schema knows, optional ones included: `server.port`, `routes[].name`
 * for the items of a list, `upstreams.*.url` under a mapping whose keys are the operator's.
 */
function schemaKeyPaths(schema: z.ZodType, path = ''): string[] {
  if (
    schema instanceof z.ZodDefault ||
    schema instanceof z.ZodPrefault ||
    schema instanceof z.ZodOptional
  )
    return schemaKeyPaths(schema.unwrap() as z.ZodType, path);
  // z.preprocess (the env-friendly numbers and booleans) is a pipe into the real schema.
  if (schema instanceof z.ZodPipe) return schemaKeyPaths(schema.out as z.ZodType, path);
  if (schema instanceof z.ZodArray) return schemaKeyPaths(schema.element as z.ZodType, `${path}[]`);
  if (schema instanceof z.ZodRecord) {
    const keyPath = `${path}.*`;
    return [keyPath, ...schemaKeyPaths(schema.valueType as z.ZodType, keyPath)];
  }
  if (schema instanceof z.ZodObject) {
    return Object.entries(schema.shape as Record<string, z.ZodType>).flatMap(([key, child]) => {
      const keyPath = path === '' ? key : `${path}.${key}`;
      return [keyPath, ...schemaKeyPaths(child, keyPath)];
    });
  }
  return [];
}

const KEY_LINE = /^( *)(- +)?([A-Za-z_][A-Za-z0-9_]*):(?: |$)/;

interface OpenKey {
  readonly indent: number;
  readonly path: string;
  /** A list item (`- `) rather than a key. */
  readonly item: boolean;
}

/**
 * The key paths written in a block-style YAML text, commented-out keys included: a line's
 * leading `# ` is dropped, so the key keeps the column of its `#` and nests under the key
 * above it as it would once uncommented. Prose comments that happen to start with `word:`
 * add stray paths, which do no harm: the test only asks that the schema's paths be there.
 */
function exampleKeyPaths(text: string): Set<string> {
  const paths = new Set<string>();
  const open: OpenKey[] = [];
  /** Closes the innermost open keys while `test` holds; returns the path of the one left. */
  const closeWhile = (test: (key: OpenKey) => boolean): string | undefined => {
    for (let last = open.at(-1); last !== undefined && test(last); last = open.at(-1)) open.pop();
    return open.at(-1)?.path;
  };
  for (const line of text.split('\n')) {
    const match = KEY_LINE.exec(line.replace(/^( *)# ?/, '$1'));
    if (match === null) continue;
    const [, spaces = '', dash, key = ''] = match;
    let indent = spaces.length;
    if (dash !== undefined) {
      // `- key:` opens an item of the list above it, which may sit at the list key's column.
      const list = closeWhile((o) => o.indent > indent || (o.indent === indent && o.item));
      open.push({ indent, path: `${list ?? ''}[]`, item: true });
      indent += dash.length;
    }
    const parent = closeWhile((o) => o.indent >= indent);
    const path = parent === undefined ? key : `${parent}.${key}`;
    paths.add(path);
    open.push({ indent, path, item: false });
  }
  return paths;
}

/** Whether a schema path (`*` standing for any one key) is among the written paths. */
function isWritten(schemaPath: string, written: ReadonlySet<string>): boolean {
  if (!schemaPath.includes('*')) return written.has(schemaPath);
  const pattern = new RegExp(
    `^${schemaPath.replace(/[.[\]]/g, '\\$&').replaceAll('*', '[^.[\\]]+')}$`,
  );
  return [...written].some((path) => pattern.test(path));
}

describe('config/gateway.example.yaml', () => {
  it('is a configuration the loader accepts', () => {
    expect(() => loadConfigFile(EXAMPLE, {})).not.toThrow();
  });

  it('sets every key it sets to its default value', () => {
    expect(loadConfigFile(EXAMPLE, {})).toEqual(parseConfig('', 'empty.yaml'));
  });

  it('shows every key of the schema, set or commented out, under its parent', () => {
    const schemaPaths = schemaKeyPaths(configSchema);
    const written = exampleKeyPaths(readFileSync(EXAMPLE, 'utf8'));
    expect(schemaPaths.filter((path) => !isWritten(path, written))).toEqual([]);
  });
});

describe('the key path readers this check relies on', () => {
  it('walk the schema into nested, optional, list and mapping keys', () => {
    const paths = schemaKeyPaths(configSchema);
    expect(paths).toEqual(
      expect.arrayContaining([
        'server.maxBodyBytes',
        'upstreams.*',
        'upstreams.*.url',
        'routes[].upstreamPath',
        'auth.bearer.issuers[].jwksUrl',
        'tokens.signingKeyFile',
        'referenceUpstream.accounts.*[].id',
      ]),
    );
  });

  it('read commented-out keys and list items under their parents', () => {
    const written = exampleKeyPaths(
      [
        'a:',
        '  # Prose about b, not a key.',
        '  b: 1',
        '  # c: 2',
        '  list: []',
        '  # - name: x',
        '  #   value: 1',
        '  # - name: y',
        '  nested:',
        '    - k: 1',
        '      deeper:',
        '        leaf: 2',
        'd: 3',
      ].join('\n'),
    );
    expect(written).toEqual(
      new Set([
        'a',
        'a.b',
        'a.c',
        'a.list',
        'a.list[].name',
        'a.list[].value',
        'a.nested',
        'a.nested[].k',
        'a.nested[].deeper',
        'a.nested[].deeper.leaf',
        'd',
      ]),
    );
    expect(isWritten('a.*', written)).toBe(true);
    expect(isWritten('a.*.leaf', written)).toBe(false);
    expect(isWritten('a.nested[].*', written)).toBe(true);
  });
});

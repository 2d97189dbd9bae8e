import { z } from 'zod';
import { closestName } from './closest-name.js';

/** A YAML path as the problems spell it: `routes[0].paths[1]`, `(root)` for the document. */
function formatPath(path: readonly PropertyKey[]): string {
  const text = path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`))
    .join('');
  return text || '(root)';
}

/**
 * One schema problem as an operator reads it, prefixed with its YAML path: an unknown key
 * with the known key it most likely meant ("did you mean `port`?"), an absent key the
 * schema needs as "required", anything else with the schema's message. `tree` is the
 * substituted document the schema read; `schema` the one that read it.
 */
export function describeIssue(issue: z.core.$ZodIssue, tree: unknown, schema: z.ZodType): string {
  const path = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(schema, issue.path);
    const keys = issue.keys.map((key) => {
      const meant = closestName(key, known);
      return meant === undefined ? key : `${key} (did you mean \`${meant}\`?)`;
    });
    return `${path}: unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
  }
  if (
    (issue.code === 'invalid_type' || issue.code === 'invalid_union') &&
    isAbsent(tree, issue.path)
  )
    return `${path}: required`;
  // `port:` with nothing after it is YAML's null: say so, rather than "received null".
  if (issue.code === 'invalid_type' && valueAt(tree, issue.path) === null)
    return `${path}: has no value (expected ${issue.expected})`;
  // The schema library's own words for a bound ("Too small: expected number to be >=30");
  // a message the schema wrote itself stays as written.
  if (
    (issue.code === 'too_small' || issue.code === 'too_big') &&
    /^Too (?:small|big):/.test(issue.message)
  )
    return `${path}: ${describeBound(issue)}`;
  return `${path}: ${issue.message.replace(/^Invalid input: /, '')}`;
}

/** `must be at least 30`, `must have at most 64 entries`, `must be more than 0`, … */
function describeBound(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  const small = issue.code === 'too_small';
  const limit = Number(small ? issue.minimum : issue.maximum);
  const words = issue.inclusive
    ? small
      ? 'at least'
      : 'at most'
    : small
      ? 'more than'
      : 'less than';
  if (issue.origin === 'string') return `must be ${words} ${limit} characters long`;
  if (issue.origin === 'array' || issue.origin === 'set')
    return `must have ${words} ${limit} entries`;
  return `must be ${words} ${limit}`;
}

/** The value at `path` in the tree; undefined when it, or a mapping above it, is absent. */
function valueAt(tree: unknown, path: readonly PropertyKey[]): unknown {
  let node = tree;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** True when the value at `path` is not in the tree: its key, or a mapping above it, is absent. */
function isAbsent(tree: unknown, path: readonly PropertyKey[]): boolean {
  let node = tree;
  for (const key of path) {
    if (node === undefined) return true;
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node === undefined;
}

/** The keys the object schema at `path` knows; none when the path leads elsewhere. */
function knownKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const found = schemaAt(schema, path);
  return found instanceof z.ZodObject ? Object.keys(found.shape) : [];
}

/** The schema that validates the value at `path`, through defaults, optionals and pipes. */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  const inner = unwrap(schema);
  const [head, ...rest] = path;
  if (head === undefined) return inner;
  if (inner instanceof z.ZodObject && typeof head === 'string') {
    const child = (inner.shape as Record<string, z.ZodType | undefined>)[head];
    return child === undefined ? undefined : schemaAt(child, rest);
  }
  if (inner instanceof z.ZodArray && typeof head === 'number')
    return schemaAt(inner.element as z.ZodType, rest);
  if (inner instanceof z.ZodRecord) return schemaAt(inner.valueType as z.ZodType, rest);
  return undefined;
}

function unwrap(schema: z.ZodType): z.ZodType {
  if (
    schema instanceof z.ZodOptional ||
    schema instanceof z.ZodDefault ||
    schema instanceof z.ZodPrefault
  )
    return unwrap(schema.unwrap() as z.ZodType);
  // A preprocess step is a pipe into the schema that validates.
  if (schema instanceof z.ZodPipe) return unwrap(schema.out as z.ZodType);
  return schema;
}

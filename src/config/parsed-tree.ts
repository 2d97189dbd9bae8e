/** A path into the configuration as the schema library spells it: keys and list indexes. */
export type SettingPath = readonly PropertyKey[];

/** What the cross-checks read of an issue the parse raised: where it lies, and its kind. */
export interface ParseIssue {
  readonly code: string;
  readonly path?: SettingPath | undefined;
}

/**
 * What the one parse of the configuration made of it, read where it parsed: the schema's
 * output, partial when the parse failed (a refused setting keeps what the file gave there),
 * beside the issues the parse raised. The cross-checks read the file through it, so that they
 * run whatever the schema said elsewhere, each on the settings the schema accepted.
 */
export interface ParsedTree {
  /**
   * The setting at `path` as the schema made it (its default when absent); undefined when
   * the schema refused it (an issue lies at or under it) or a section above it is not a
   * mapping or a list. A check skips what is undefined: the schema has reported it.
   */
  setting(path: SettingPath): unknown;
  /** The setting at `path` when it is a string (see `setting`). */
  text(path: SettingPath): string | undefined;
  /** The setting at `path` when it is a number (see `setting`). */
  number(path: SettingPath): number | undefined;
  /** The indexes of the list at `path`, its refused entries included; none when it is no list. */
  indexes(path: SettingPath): number[];
  /**
   * The keys of the mapping at `path`, those the schema refused as keys included (their
   * problem is theirs, reported once); undefined when it is no mapping.
   */
  keys(path: SettingPath): ReadonlySet<string> | undefined;
}

export function parsedTree(output: unknown, issues: readonly ParseIssue[]): ParsedTree {
  const at = (path: SettingPath): unknown => {
    let node = output;
    for (const key of path) {
      if (node === null || typeof node !== 'object') return undefined;
      node = (node as Record<PropertyKey, unknown>)[key];
    }
    return node;
  };
  const refused = (path: SettingPath) => issues.some((issue) => startsWith(issue.path ?? [], path));
  const setting = (path: SettingPath) => (refused(path) ? undefined : at(path));
  return {
    setting,
    text: (path) => {
      const value = setting(path);
      return typeof value === 'string' ? value : undefined;
    },
    number: (path) => {
      const value = setting(path);
      return typeof value === 'number' ? value : undefined;
    },
    indexes: (path) => {
      const list = at(path);
      return Array.isArray(list) ? list.map((_, i) => i) : [];
    },
    keys: (path) => {
      const mapping = at(path);
      if (mapping === null || typeof mapping !== 'object' || Array.isArray(mapping))
        return undefined;
      const refusedKeys = issues.flatMap(({ code, path: where = [] }) =>
        code === 'invalid_key' && where.length === path.length + 1 && startsWith(where, path)
          ? [String(where[path.length])]
          : [],
      );
      return new Set([...Object.keys(mapping), ...refusedKeys]);
    },
  };
}

function startsWith(path: SettingPath, prefix: SettingPath): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => path[i] === key);
}

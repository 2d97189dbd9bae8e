const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML tree.
 * Substitution happens after parsing, so a variable's value can never change the shape
 * of the document. Values stay strings; the schema reads numbers and booleans from them.
 */
export function substituteEnv(
  tree: unknown,
  env: Environment,
  problems: string[],
  path = '',
): unknown {
  if (typeof tree === 'string') return substituteString(tree, env, problems, path);
  if (Array.isArray(tree))
    return tree.map((item, i) => substituteEnv(item, env, problems, `${path}[${i}]`));
  if (tree !== null && typeof tree === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(tree)) {
      out[key] = substituteEnv(value, env, problems, path === '' ? key : `${path}.${key}`);
    }
    return out;
  }
  return tree;
}

function substituteString(
  value: string,
  env: Environment,
  problems: string[],
  path: string,
): unknown {
  if (!value.includes('${')) return value;
  const result = value.replace(REFERENCE, (_match, name: string, fallback: string | undefined) => {
    const found = env[name];
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) return fallback;
    problems.push(`${path || '(root)'}: environment variable ${name} is not set`);
    return '';
  });
  return result;
}

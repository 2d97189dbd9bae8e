/**
 * What a PromQL expression names: its metric names and its label names, read with the few
 * rules the gateway's dashboard and alert rules need (no parser: a name is an identifier that
 * is neither a function, a keyword nor a label). Grafana's variables (`$job`,
 * `$__rate_interval`) are dropped first.
 */

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** The label lists of grouping and matching modifiers: `by (route, le)`, `on (job)`. */
const GROUPING = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
/** A selector's matchers: `{job=~"$job", status!="200"}`. */
const MATCHERS = /\{([^}]*)\}/g;
const MATCHER = /([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/g;
const IDENTIFIER = /[A-Za-z_:][A-Za-z0-9_:]*/g;

function withoutVariables(expr: string): string {
  return expr.replace(/\$\{[^}]*\}|\$\w+/g, 'VAR');
}

/** The metric names an expression reads, each once, in order. */
export function metricNames(expr: string): string[] {
  const bare = withoutVariables(expr)
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(GROUPING, ' ')
    .replace(MATCHERS, ' ')
    // Range and subquery durations: [5m], [1h:1m].
    .replace(/\[[^\]]*\]/g, ' ')
    // Numbers, durations after offset, and scientific notation.
    .replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?[smhdwy]?\b/gi, ' ');
  const names: string[] = [];
  for (const match of bare.matchAll(IDENTIFIER)) {
    const name = match[0];
    const next = bare.slice((match.index ?? 0) + name.length).trimStart();
    if (next.startsWith('(') || KEYWORDS.has(name.toLowerCase()) || name === 'VAR') continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

/** The label names an expression groups, matches or selects by, each once. */
export function labelNames(expr: string): string[] {
  const text = withoutVariables(expr);
  const names: string[] = [];
  const add = (name: string): void => {
    if (name !== '' && !names.includes(name)) names.push(name);
  };
  for (const [, list] of text.matchAll(GROUPING))
    for (const name of (list ?? '').split(',')) add(name.trim());
  for (const [, matchers] of text.matchAll(MATCHERS))
    for (const [, name] of (matchers ?? '').matchAll(MATCHER)) add(name ?? '');
  return names;
}

/**
 * The family a sample name belongs to, among `families` (name -> TYPE of the exposition):
 * itself, or a histogram's (or summary's) `_bucket`, `_sum` and `_count`.
 */
export function familyOf(name: string, families: ReadonlyMap<string, string>): string | undefined {
  if (families.has(name)) return name;
  const suffix = /_(bucket|sum|count)$/.exec(name);
  if (suffix === null) return undefined;
  const base = name.slice(0, -suffix[0].length);
  const type = families.get(base);
  if (type === 'histogram' || (type === 'summary' && suffix[1] !== 'bucket')) return base;
  return undefined;
}

/** The families of a Prometheus text exposition, by their `# TYPE` lines. */
export function exposedFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    if (name !== undefined && type !== undefined) families.set(name, type);
  return families;
}

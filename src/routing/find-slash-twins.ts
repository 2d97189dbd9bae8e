import { createRouteTable, type RouteTableEntries } from './route-table.js';

export interface SlashTwinConflict {
  /** A configured path or prefix. */
  readonly path: string;
  /** The same path with its trailing `/` added or removed. */
  readonly twin: string;
}

/**
 * The configured paths and prefixes whose trailing-slash twin another entry would match.
 * Express, Rails, Django's APPEND_SLASH and many others serve `/p` and `/p/` alike, so
 * when a prefix `/accounts/admin/` asks for a scope and `/accounts/` does not,
 * `/accounts/admin` would reach the admin resource under the weaker route. Such a table is
 * refused when the configuration loads rather than guessed at per request: the operator
 * names the twin on the route it belongs to. A twin no entry matches is fine (404).
 */
export function findSlashTwins<T>(entries: RouteTableEntries<T>): SlashTwinConflict[] {
  const table = createRouteTable(entries);
  const paths = [...entries.exact.keys(), ...(entries.prefixes ?? []).map((p) => p.prefix)];
  const conflicts: SlashTwinConflict[] = [];
  for (const path of paths) {
    if (path === '/') continue;
    const twin = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
    const own = table.match(path);
    const other = table.match(twin);
    if (own.kind === 'match' && other.kind === 'match' && own.entry !== other.entry)
      conflicts.push({ path, twin });
  }
  return conflicts;
}

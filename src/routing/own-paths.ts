/**
 * Which port serves an own path: `public`, the API port beside the configured routes (which
 * may not take these paths), or `admin`, the admin port (health, readiness, metrics).
 */
export type OwnPathPort = 'public' | 'admin';

export interface OwnPath {
  /** The path as matched; with `param`, a prefix that one more segment completes. */
  readonly path: string;
  /** The name of that last segment (`/keys/{key}`), on a parameterized path only. */
  readonly param?: string;
  /**
   * The setting that moves it (`portal.basePath`), where it is a default only: then the path
   * and every path under it are the entry's, and the configuration checks them itself.
   */
  readonly configuredBy?: string;
  /** The methods it takes; any other is answered 405 with these in `Allow`. */
  readonly methods: readonly string[];
  readonly port: OwnPathPort;
}

/**
 * The one table of the gateway's own paths: the route table registers the public ones, the
 * configuration refuses a route that takes one, the OpenAPI document lists them, and the
 * admin port serves its own. (The forward-auth check's path is configured: not here.)
 */
export const OWN_PATHS = {
  keys: { path: '/keys', methods: ['GET', 'HEAD', 'POST'], port: 'public' },
  key: { path: '/keys/', param: 'key', methods: ['DELETE'], port: 'public' },
  token: { path: '/auth/token', methods: ['POST'], port: 'public' },
  jwks: { path: '/.well-known/jwks.json', methods: ['GET', 'HEAD'], port: 'public' },
  openapi: { path: '/openapi.json', methods: ['GET', 'HEAD'], port: 'public' },
  // The key holder's pages (docs/portal.md): HTML, not the JSON API, so not in the OpenAPI
  // document; served under the configured base path, of which this is the default.
  portal: {
    path: '/portal/',
    configuredBy: 'portal.basePath',
    methods: ['GET', 'HEAD', 'POST'],
    port: 'public',
  },
  health: { path: '/healthz', methods: ['GET', 'HEAD'], port: 'admin' },
  readiness: { path: '/readyz', methods: ['GET', 'HEAD'], port: 'admin' },
  metrics: { path: '/metrics', methods: ['GET', 'HEAD'], port: 'admin' },
} as const satisfies Readonly<Record<string, OwnPath>>;

const entries: readonly OwnPath[] = Object.values(OWN_PATHS);

/** The exact paths `port` serves itself, in the table's order (not those a setting moves). */
export function ownExactPaths(port: OwnPathPort): string[] {
  return entries
    .filter(
      (entry) =>
        entry.port === port && entry.param === undefined && entry.configuredBy === undefined,
    )
    .map((entry) => entry.path);
}

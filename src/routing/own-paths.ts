/**
 * Which port serves an own path: `public`, the API port beside the configured routes (which
 * may not take these paths), or `admin`, the admin port (health, readiness, metrics).
 */
export type OwnPathPort = 'public' | 'admin';

export interface OwnPath {
  /** The path as matched; with `param`, a prefix that one more segment completes. */
  readonly path: string;
  /** The name of that segment (`/keys/{key}`), on a parameterized path only. */
  readonly param?: string;
  /** What follows the segment, fixed (`/roll` of `/keys/{key}/roll`); none: it is the last. */
  readonly suffix?: string;
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
  keyEvents: { path: '/keys/events', methods: ['GET', 'HEAD'], port: 'public' },
  key: { path: '/keys/', param: 'key', methods: ['DELETE'], port: 'public' },
  keyRoll: { path: '/keys/', param: 'key', suffix: '/roll', methods: ['POST'], port: 'public' },
  token: { path: '/auth/token', methods: ['POST'], port: 'public' },
  jwks: { path: '/.well-known/jwks.json', methods: ['GET', 'HEAD'], port: 'public' },
  openapi: { path: '/openapi.json', methods: ['GET', 'HEAD'], port: 'public' },
  health: { path: '/healthz', methods: ['GET', 'HEAD'], port: 'admin' },
  readiness: { path: '/readyz', methods: ['GET', 'HEAD'], port: 'admin' },
  metrics: { path: '/metrics', methods: ['GET', 'HEAD'], port: 'admin' },
} as const satisfies Readonly<Record<string, OwnPath>>;

const entries: readonly OwnPath[] = Object.values(OWN_PATHS);

/** The exact paths `port` serves itself, in the table's order. */
export function ownExactPaths(port: OwnPathPort): string[] {
  return entries
    .filter((entry) => entry.port === port && entry.param === undefined)
    .map((entry) => entry.path);
}

/** The prefixes of the parameterized paths `port` serves (`/keys/`), each once. */
export function ownParamPrefixes(port: OwnPathPort): string[] {
  const prefixes = entries
    .filter((entry) => entry.port === port && entry.param !== undefined)
    .map((entry) => entry.path);
  return [...new Set(prefixes)];
}

/** A path as OpenAPI writes it: `/keys/{key}/roll` for a parameterized one. */
export function ownPathTemplate(entry: OwnPath): string {
  return entry.param === undefined
    ? entry.path
    : `${entry.path}{${entry.param}}${entry.suffix ?? ''}`;
}

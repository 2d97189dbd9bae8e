import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import {
  applyOverrides,
  parseListen,
  type ConfigOverrides,
  type Override,
} from './apply-overrides.js';
import {
  adminSchema,
  bearerIssuerSchema,
  configSchema,
  redisSchema,
  routeSchema,
  serverSchema,
  type GatewayConfig,
} from './config-schema.js';
import { describeIssue } from './describe-issue.js';
import { readYaml } from './read-yaml.js';
import { substituteEnv, type Environment } from './substitute-env.js';
import { findSlashTwins } from '../routing/find-slash-twins.js';
import { ownExactPaths } from '../routing/own-paths.js';

/** Raised for a configuration that cannot be used; lists every problem found at once. */
export class ConfigError extends Error {
  /** Every problem: those of flags and environment variables first, then the file's. */
  readonly problems: readonly string[];
  constructor(
    source: string,
    fileProblems: readonly string[],
    optionProblems: readonly string[] = [],
  ) {
    super(describeProblems(source, fileProblems, optionProblems));
    this.name = 'ConfigError';
    this.problems = [...optionProblems, ...fileProblems];
  }
}

/**
 * A bad flag or variable is named as itself, on one line when it is the only problem, and
 * never reported as a problem of the file: the file may be fine.
 */
function describeProblems(
  source: string,
  fileProblems: readonly string[],
  optionProblems: readonly string[],
): string {
  const [only] = optionProblems;
  if (only !== undefined && optionProblems.length === 1 && fileProblems.length === 0) return only;
  const list = (problems: readonly string[]): string => `\n  - ${problems.join('\n  - ')}`;
  const parts: string[] = [];
  if (optionProblems.length > 0)
    parts.push(`invalid command-line options or environment variables:${list(optionProblems)}`);
  if (fileProblems.length > 0)
    parts.push(`invalid configuration in ${source}:${list(fileProblems)}`);
  return parts.join('\n');
}

export function loadConfigFile(
  file: string,
  env: Environment = process.env,
  overrides: ConfigOverrides = {},
): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [
      `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  return parseConfig(text, file, env, overrides);
}

export function parseConfig(
  text: string,
  source: string,
  env: Environment = {},
  overrides: ConfigOverrides = {},
): GatewayConfig {
  const yaml = readYaml(text);
  if (yaml.problems.length > 0)
    throw new ConfigError(source, yaml.problems, applyOverrides(undefined, overrides));
  const problems: string[] = [];
  const raw = substituteEnv(yaml.tree ?? {}, env, problems);
  const optionProblems = applyOverrides(raw, overrides);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    // A setting whose variable is not set is reported once, as that: not again as the
    // empty string the schema then read.
    const unset = new Set(problems.map((problem) => problem.slice(0, problem.indexOf(': '))));
    for (const issue of parsed.error.issues) {
      const problem = describeIssue(issue, raw, configSchema);
      if (!unset.has(problem.slice(0, problem.indexOf(': ')))) problems.push(problem);
    }
  }
  // The cross-checks run whatever the schema said elsewhere, each on the settings the schema
  // accepts, so that one run reports every problem of the file.
  problems.push(...crossCheck(readCheckedSettings(raw), listenOrigins(overrides), optionProblems));
  if (problems.length > 0 || optionProblems.length > 0 || !parsed.success)
    throw new ConfigError(source, problems, optionProblems);
  return deepFreeze(parsed.data);
}

type Checked<T extends z.ZodType> = z.output<T> | undefined;

/**
 * The settings the cross-checks compare, read from the substituted tree one by one: each is
 * its schema's value (its default when absent), or undefined when the schema refuses it or
 * its section is not a mapping. A check skips what is undefined, since the schema has
 * already reported it.
 */
interface CheckedSettings {
  readonly routes: readonly {
    readonly name: Checked<typeof routeSchema.shape.name>;
    readonly upstream: Checked<typeof routeSchema.shape.upstream>;
    readonly paths: readonly Checked<typeof pathSchema>[];
    readonly prefixes: readonly Checked<typeof prefixSchema>[];
    /** Neither `paths` nor `prefixes` holds an entry. */
    readonly targetless: boolean;
  }[];
  /** Undefined when `upstreams` is not a mapping. */
  readonly upstreamNames: ReadonlySet<string> | undefined;
  readonly issuerNames: readonly Checked<typeof bearerIssuerSchema.shape.name>[];
  readonly store: Checked<typeof storeSchema>;
  readonly redis: {
    readonly mode: Checked<typeof redisSchema.shape.mode>;
    readonly nodes: Checked<typeof redisSchema.shape.nodes>;
    readonly singleSlotPrefix: Checked<typeof redisSchema.shape.singleSlotPrefix>;
  };
  readonly server: {
    readonly host: Checked<typeof serverSchema.shape.host>;
    readonly port: Checked<typeof serverSchema.shape.port>;
    readonly headersTimeoutMs: Checked<typeof serverSchema.shape.headersTimeoutMs>;
    readonly requestTimeoutMs: Checked<typeof serverSchema.shape.requestTimeoutMs>;
    readonly workers: Checked<typeof serverSchema.shape.workers>;
  };
  readonly forwardAuth: {
    readonly enabled: Checked<typeof forwardAuthSchema.shape.enabled>;
    readonly path: Checked<typeof forwardAuthSchema.shape.path>;
  };
  readonly admin: {
    readonly enabled: Checked<typeof adminSchema.shape.enabled>;
    readonly host: Checked<typeof adminSchema.shape.host>;
    readonly port: Checked<typeof adminSchema.shape.port>;
  };
}

const storeSchema = configSchema.shape.credentials.unwrap().shape.store;
const forwardAuthSchema = configSchema.shape.forwardAuth.unwrap();
const pathSchema = routeSchema.shape.paths.unwrap().element;
const prefixSchema = routeSchema.shape.prefixes.unwrap().element;

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The mapping at `key`: `fallback` when absent (its defaults apply), undefined when unusable. */
function mappingAt(
  tree: Mapping | undefined,
  key: string,
  fallback: Mapping = {},
): Mapping | undefined {
  const value = tree?.[key];
  if (tree === undefined || (value !== undefined && !isMapping(value))) return undefined;
  return value ?? fallback;
}

/** The list at `key`: `fallback` when absent, [] when unusable. */
function listAt(tree: Mapping | undefined, key: string, fallback: readonly unknown[]): unknown[] {
  const value = tree?.[key];
  if (value === undefined && tree !== undefined) return [...fallback];
  return Array.isArray(value) ? value : [];
}

function valid<T extends z.ZodType>(schema: T, value: unknown): Checked<T> {
  const result = schema.safeParse(value);
  return result.success ? result.data : undefined;
}

function readCheckedSettings(raw: unknown): CheckedSettings {
  const root = isMapping(raw) ? raw : undefined;
  const field = <T extends z.ZodType>(section: Mapping | undefined, key: string, schema: T) =>
    section === undefined ? undefined : valid(schema, section[key]);
  const routes = listAt(root, 'routes', configSchema.shape.routes.parse(undefined)).map((item) => {
    const route = isMapping(item) ? item : undefined;
    return {
      name: field(route, 'name', routeSchema.shape.name),
      upstream: field(route, 'upstream', routeSchema.shape.upstream),
      paths: listAt(route, 'paths', []).map((path) => valid(pathSchema, path)),
      prefixes: listAt(route, 'prefixes', []).map((prefix) => valid(prefixSchema, prefix)),
      // Only a mapping whose lists are absent or empty: anything else the schema reports.
      targetless:
        route !== undefined &&
        [route.paths, route.prefixes].every(
          (list) => list === undefined || (Array.isArray(list) && list.length === 0),
        ),
    };
  });
  const upstreams = mappingAt(root, 'upstreams', configSchema.shape.upstreams.parse(undefined));
  const upstreamNames = upstreams === undefined ? undefined : new Set(Object.keys(upstreams));
  const bearer = mappingAt(mappingAt(root, 'auth'), 'bearer');
  const issuerNames = listAt(bearer, 'issuers', []).map((item) =>
    isMapping(item) ? valid(bearerIssuerSchema.shape.name, item.name) : undefined,
  );
  const credentials = mappingAt(root, 'credentials');
  const redis = mappingAt(credentials, 'redis');
  const server = mappingAt(root, 'server');
  const admin = mappingAt(root, 'admin');
  const forwardAuth = mappingAt(root, 'forwardAuth');
  return {
    forwardAuth: {
      enabled: field(forwardAuth, 'enabled', forwardAuthSchema.shape.enabled),
      path: field(forwardAuth, 'path', forwardAuthSchema.shape.path),
    },
    routes,
    upstreamNames,
    issuerNames,
    store: field(credentials, 'store', storeSchema),
    redis: {
      mode: field(redis, 'mode', redisSchema.shape.mode),
      nodes: field(redis, 'nodes', redisSchema.shape.nodes),
      singleSlotPrefix: field(redis, 'singleSlotPrefix', redisSchema.shape.singleSlotPrefix),
    },
    server: {
      host: field(server, 'host', serverSchema.shape.host),
      port: field(server, 'port', serverSchema.shape.port),
      headersTimeoutMs: field(server, 'headersTimeoutMs', serverSchema.shape.headersTimeoutMs),
      requestTimeoutMs: field(server, 'requestTimeoutMs', serverSchema.shape.requestTimeoutMs),
      workers: field(server, 'workers', serverSchema.shape.workers),
    },
    admin: {
      enabled: field(admin, 'enabled', adminSchema.shape.enabled),
      host: field(admin, 'host', adminSchema.shape.host),
      port: field(admin, 'port', adminSchema.shape.port),
    },
  };
}

/** Where the API and admin addresses come from: the flag or variable that set them, if any. */
interface ListenOrigins {
  readonly server: string | undefined;
  readonly admin: string | undefined;
}

function listenOrigins(overrides: ConfigOverrides): ListenOrigins {
  // A value that does not parse was not applied (and is reported as itself).
  const from = (override: Override | undefined) =>
    override !== undefined && parseListen(override.value) !== undefined ? override.from : undefined;
  return { server: from(overrides.listen), admin: from(overrides.adminListen) };
}

/**
 * The problems no single setting has. One that involves a flag's or variable's value is
 * that option's problem (pushed to `optionProblems`), not the file's.
 */
function crossCheck(
  settings: CheckedSettings,
  origins: ListenOrigins,
  optionProblems: string[],
): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const paths = new Map<string, string>();
  const prefixes = new Map<string, string>();
  settings.routes.forEach((route, i) => {
    if (route.name !== undefined) {
      if (names.has(route.name))
        problems.push(`routes[${i}].name: duplicate route name ${route.name}`);
      names.add(route.name);
    }
    if (
      route.upstream !== undefined &&
      settings.upstreamNames !== undefined &&
      !settings.upstreamNames.has(route.upstream)
    ) {
      problems.push(`routes[${i}].upstream: no upstream named ${route.upstream}`);
    }
    route.paths.forEach((path, j) => {
      if (path === undefined) return;
      const owner = paths.get(path);
      if (owner !== undefined)
        problems.push(`routes[${i}].paths[${j}]: ${path} is already a path of route ${owner}`);
      paths.set(path, route.name ?? `routes[${i}]`);
      if (RESERVED_PATHS.has(path))
        problems.push(`routes[${i}].paths[${j}]: ${path} is served by the gateway itself`);
    });
    route.prefixes.forEach((prefix, j) => {
      if (prefix === undefined) return;
      const owner = prefixes.get(prefix);
      if (owner !== undefined)
        problems.push(
          `routes[${i}].prefixes[${j}]: ${prefix} is already a prefix of route ${owner}`,
        );
      prefixes.set(prefix, route.name ?? `routes[${i}]`);
      if (shadowsGateway(prefix))
        problems.push(
          `routes[${i}].prefixes[${j}]: ${prefix} covers paths the gateway serves itself`,
        );
    });
    if (route.targetless)
      problems.push(`routes[${i}].paths: a route needs paths, prefixes or both`);
  });
  for (const { path, twin } of findSlashTwins({
    exact: paths,
    prefixes: [...prefixes].map(([prefix, entry]) => ({ prefix, entry })),
  }))
    problems.push(`routes: ${twin} falls under another route than ${path}; ${SLASH_TWIN_HINT}`);
  problems.push(...forwardAuthProblems(settings));
  const issuerNames = new Set<string>();
  settings.issuerNames.forEach((name, i) => {
    if (name === undefined) return;
    if (issuerNames.has(name))
      problems.push(`auth.bearer.issuers[${i}].name: duplicate name ${name}`);
    issuerNames.add(name);
  });
  const { redis, server, admin } = settings;
  if (redis.mode !== undefined && redis.mode !== 'standalone' && redis.nodes?.length === 0) {
    problems.push(`credentials.redis.nodes: ${redis.mode} mode needs at least one host:port`);
  }
  // The single-slot layout is read and moved by scripts over several of its keys at once: on
  // a Cluster they share a slot only through the prefix's hash tag, which it always had there.
  if (
    redis.mode === 'cluster' &&
    typeof redis.singleSlotPrefix === 'string' &&
    !/\{[^}]+\}/.test(redis.singleSlotPrefix)
  ) {
    problems.push(
      'credentials.redis.singleSlotPrefix: cluster mode: the single-slot layout had a hash tag such as {ag}: (or false)',
    );
  }
  if (
    server.headersTimeoutMs !== undefined &&
    server.requestTimeoutMs !== undefined &&
    server.headersTimeoutMs > server.requestTimeoutMs
  ) {
    problems.push('server.headersTimeoutMs: must not exceed server.requestTimeoutMs');
  }
  // Pairs, users and revocations of the memory store live in one process: workers would each
  // hold their own copy, and a pair revoked through one would still work on the others.
  if (settings.store === 'memory' && server.workers !== undefined && server.workers !== 1) {
    problems.push(
      'server.workers: the memory store keeps its state in one process; more than one worker needs credentials.store: redis',
    );
  }
  if (
    admin.enabled === true &&
    admin.port !== undefined &&
    admin.port !== 0 &&
    admin.port === server.port &&
    admin.host !== undefined &&
    admin.host === server.host
  ) {
    if (origins.server === undefined && origins.admin === undefined)
      problems.push('admin.port: must differ from server.port');
    else
      optionProblems.push(
        `${origins.admin ?? 'admin.port'}: must differ from ${origins.server ?? 'server.port'}`,
      );
  }
  return problems;
}

/** Why a path and its trailing-slash twin must share a route, and the fix. */
export const SLASH_TWIN_HINT = 'an upstream may serve both alike, so list both on one route';

/** Paths of the gateway's own endpoints, which a configured route may not shadow. */
export const RESERVED_PATHS: ReadonlySet<string> = new Set(ownExactPaths('public'));

/** Prefixes under which the gateway serves its own endpoints (`/keys/{keyId}`). */
const RESERVED_PREFIXES: readonly string[] = ['/keys/'];

/**
 * Whether a route prefix would take a path of the gateway's own: exact paths and `/keys/`
 * would still win in the route table, but a near miss (`/keys/not-a-key-id`) would then
 * reach the upstream instead of a 404.
 */
function shadowsGateway(prefix: string): boolean {
  for (const path of RESERVED_PATHS) if (path.startsWith(prefix)) return true;
  return RESERVED_PREFIXES.some((own) => own.startsWith(prefix) || prefix.startsWith(own));
}

/**
 * The check's path, and every path under it (Envoy's shape), belong to the check: a route
 * there would never be reached, and a route prefix over it would take it.
 */
function forwardAuthProblems({ forwardAuth, routes }: CheckedSettings): string[] {
  const { enabled, path } = forwardAuth;
  if (enabled !== true || path === undefined) return [];
  const under = `${path}/`;
  const taken = (other: string) => other === path || other.startsWith(under);
  const owners = routes.flatMap((route, i) => {
    const name = route.name ?? `routes[${i}]`;
    const paths = route.paths.filter((p) => p !== undefined && taken(p));
    const prefixes = route.prefixes.filter(
      (prefix) => prefix !== undefined && (taken(prefix) || under.startsWith(prefix)),
    );
    return paths.length + prefixes.length > 0 ? [name] : [];
  });
  const problems = owners.map(
    (name) => `forwardAuth.path: ${path} (or a path under it) is also taken by route ${name}`,
  );
  if (RESERVED_PATHS.has(path) || shadowsGateway(under))
    problems.push(`forwardAuth.path: ${path} covers paths the gateway serves itself`);
  return problems;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

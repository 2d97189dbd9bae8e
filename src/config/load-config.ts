import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import {
  applyOverrides,
  parseListen,
  type ConfigOverrides,
  type Override,
} from './apply-overrides.js';
import { configSchema, type GatewayConfig } from './config-schema.js';
import { describeIssue } from './describe-issue.js';
import { parsedTree, type ParsedTree } from './parsed-tree.js';
import { readYaml } from './read-yaml.js';
import {
  issuerNameProblems,
  listenerProblems,
  redisTopologyProblems,
  serverProblems,
  type CrossCheckProblem,
  type ListenOrigins,
} from './section-checks.js';
import { substituteEnv, type Environment } from './substitute-env.js';
import { findSlashTwins } from '../routing/find-slash-twins.js';
import { ownExactPaths, ownParamPrefixes } from '../routing/own-paths.js';

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
  const parsed = checkedConfigSchema(listenOrigins(overrides)).safeParse(raw);
  if (!parsed.success) {
    // A setting whose variable is not set is reported once, as that: not again as the
    // empty string the schema then read.
    const unset = new Set(problems.map((problem) => problem.slice(0, problem.indexOf(': '))));
    for (const issue of parsed.error.issues) {
      const of = crossCheckOf(issue);
      if (of === 'options') optionProblems.push(issue.message);
      else if (of === 'file') problems.push(issue.message);
      else {
        const problem = describeIssue(issue, raw, configSchema);
        if (!unset.has(problem.slice(0, problem.indexOf(': ')))) problems.push(problem);
      }
    }
  }
  if (problems.length > 0 || optionProblems.length > 0 || !parsed.success)
    throw new ConfigError(source, problems, optionProblems);
  return deepFreeze(parsed.data);
}

/**
 * The schema and, after every rule of it, the checks no single setting can make, in one
 * parse: the cross-checks run whatever the schema said elsewhere (`when`), each on the
 * settings the schema accepted (zod's output where no issue lies), so that one run reports
 * every problem of the file. A rule that `abort`s would skip them: none of the schema does
 * (config-schema.ts, onPlainPath). Built per parse: a clash of the two listeners is the
 * problem of the flag or variable that set one, when one did.
 */
function checkedConfigSchema(origins: ListenOrigins) {
  return configSchema.superRefine(
    (_config, ctx) => {
      for (const { of, problem } of crossCheck(parsedTree(ctx.value, ctx.issues), origins))
        ctx.addIssue({ code: 'custom', message: problem, params: { crossCheck: of } });
    },
    { when: () => true },
  );
}

/** Whose problem a cross-check issue is; undefined for a problem of the schema's own. */
function crossCheckOf(issue: z.core.$ZodIssue): CrossCheckProblem['of'] | undefined {
  if (issue.code !== 'custom') return undefined;
  const of: unknown = issue.params?.['crossCheck'];
  return of === 'file' || of === 'options' ? of : undefined;
}

function listenOrigins(overrides: ConfigOverrides): ListenOrigins {
  // A value that does not parse was not applied (and is reported as itself).
  const from = (override: Override | undefined) =>
    override !== undefined && parseListen(override.value) !== undefined ? override.from : undefined;
  return { server: from(overrides.listen), admin: from(overrides.adminListen) };
}

/** The problems no single setting has, in the order they are reported. */
function crossCheck(tree: ParsedTree, origins: ListenOrigins): CrossCheckProblem[] {
  const routes = checkedRoutes(tree);
  const fileProblems = [
    ...routeProblems(routes, tree.keys(['upstreams'])),
    ...forwardAuthProblems(tree, routes),
    ...portalProblems(tree, routes),
    ...issuerNameProblems(tree),
    ...redisTopologyProblems(tree),
    ...serverProblems(tree),
  ];
  return [
    ...fileProblems.map((problem) => ({ of: 'file' as const, problem })),
    ...listenerProblems(tree, origins),
  ];
}

/** A route's settings the route checks compare, each undefined where the schema refused it. */
interface CheckedRoute {
  readonly name: string | undefined;
  readonly upstream: string | undefined;
  readonly paths: readonly (string | undefined)[];
  readonly prefixes: readonly (string | undefined)[];
  /** Neither `paths` nor `prefixes` holds an entry. */
  readonly targetless: boolean;
}

function checkedRoutes(tree: ParsedTree): CheckedRoute[] {
  return tree.indexes(['routes']).map((i) => {
    const entries = (list: string) =>
      tree.indexes(['routes', i, list]).map((j) => tree.text(['routes', i, list, j]));
    return {
      name: tree.text(['routes', i, 'name']),
      upstream: tree.text(['routes', i, 'upstream']),
      paths: entries('paths'),
      prefixes: entries('prefixes'),
      // Only a route whose lists are empty (or absent): a list that is no list the schema reports.
      targetless: ['paths', 'prefixes'].every((list) => {
        const value = tree.setting(['routes', i, list]);
        return Array.isArray(value) && value.length === 0;
      }),
    };
  });
}

/**
 * Each route's name, upstream, paths and prefixes against the other routes', the upstreams
 * and the gateway's own paths; then the trailing-slash twins the routes split.
 */
function routeProblems(
  routes: readonly CheckedRoute[],
  upstreamNames: ReadonlySet<string> | undefined,
): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const paths = new Map<string, string>();
  const prefixes = new Map<string, string>();
  routes.forEach((route, i) => {
    if (route.name !== undefined) {
      if (names.has(route.name))
        problems.push(`routes[${i}].name: duplicate route name ${route.name}`);
      names.add(route.name);
    }
    if (
      route.upstream !== undefined &&
      upstreamNames !== undefined &&
      !upstreamNames.has(route.upstream)
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
  return problems;
}

/** Why a path and its trailing-slash twin must share a route, and the fix. */
export const SLASH_TWIN_HINT = 'an upstream may serve both alike, so list both on one route';

/** Paths of the gateway's own endpoints, which a configured route may not shadow. */
export const RESERVED_PATHS: ReadonlySet<string> = new Set(ownExactPaths('public'));

/** Prefixes under which the gateway serves its own endpoints (`/keys/{keyId}`, its roll). */
const RESERVED_PREFIXES: readonly string[] = ownParamPrefixes('public');

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
function forwardAuthProblems(tree: ParsedTree, routes: readonly CheckedRoute[]): string[] {
  const enabled = tree.setting(['forwardAuth', 'enabled']);
  const path = tree.text(['forwardAuth', 'path']);
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

/**
 * The portal's base path, and every path under it, belong to the portal: a route there would
 * never be reached (or would take a page), and neither the check nor the gateway's own
 * endpoints may lie under it.
 */
function portalProblems(tree: ParsedTree, routes: readonly CheckedRoute[]): string[] {
  const base = tree.text(['portal', 'basePath']);
  if (tree.setting(['portal', 'enabled']) !== true || base === undefined) return [];
  const owners = routes.flatMap((route, i) => {
    const paths = route.paths.filter((p) => p !== undefined && p.startsWith(base));
    // A prefix over the gateway's own paths (`/`) is reported as such already.
    const prefixes = route.prefixes.filter(
      (prefix) =>
        prefix !== undefined &&
        (prefix.startsWith(base) || (base.startsWith(prefix) && !shadowsGateway(prefix))),
    );
    return paths.length + prefixes.length > 0 ? [route.name ?? `routes[${i}]`] : [];
  });
  const problems = owners.map(
    (name) => `portal.basePath: ${base} (or a path under it) is also taken by route ${name}`,
  );
  const check = tree.text(['forwardAuth', 'path']);
  if (
    tree.setting(['forwardAuth', 'enabled']) === true &&
    check !== undefined &&
    (check.startsWith(base) || `${check}/`.startsWith(base) || base.startsWith(`${check}/`))
  )
    problems.push(`portal.basePath: ${base} overlaps forwardAuth.path ${check}`);
  if (shadowsGateway(base))
    problems.push(`portal.basePath: ${base} covers paths the gateway serves itself`);
  return problems;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

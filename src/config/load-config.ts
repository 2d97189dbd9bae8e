import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { configSchema, type GatewayConfig } from './config-schema.js';
import { substituteEnv, type Environment } from './substitute-env.js';

/** Raised for a configuration that cannot be used; lists every problem found at once. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`invalid configuration in ${source}:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Values given on the command line or in GATEWAY_* variables; they win over the file. */
export interface ConfigOverrides {
  listen?: string | undefined;
  redisUrl?: string | undefined;
  upstreamUrl?: string | undefined;
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
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ConfigError(
      source,
      document.errors.map((e) => `YAML: ${e.message.split('\n')[0] ?? ''}`),
    );
  }
  const problems: string[] = [];
  const raw = substituteEnv(document.toJS() ?? {}, env, problems);
  applyOverrides(raw, overrides, problems);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) problems.push(...parsed.error.issues.map(formatIssue));
  if (problems.length === 0 && parsed.success) problems.push(...crossCheck(parsed.data));
  if (problems.length > 0 || !parsed.success) throw new ConfigError(source, problems);
  return deepFreeze(parsed.data);
}

function formatIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`))
    .join('');
  if (issue.code === 'unrecognized_keys') {
    return `${path || '(root)'}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
  }
  return `${path || '(root)'}: ${issue.message}`;
}

function applyOverrides(raw: unknown, overrides: ConfigOverrides, problems: string[]): void {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return;
  const root = raw as Record<string, unknown>;
  const section = (name: string): Record<string, unknown> => {
    const value = root[name];
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>;
    const created: Record<string, unknown> = {};
    root[name] = created;
    return created;
  };
  if (overrides.listen !== undefined) {
    const match = /^(?:(.+):)?(\d{1,5})$/.exec(overrides.listen);
    if (match === null) {
      problems.push('--listen: must be PORT or HOST:PORT');
    } else {
      const server = section('server');
      if (match[1] !== undefined) server.host = match[1].replace(/^\[(.*)\]$/, '$1');
      server.port = Number(match[2]);
    }
  }
  if (overrides.redisUrl !== undefined) {
    const credentials = section('credentials');
    credentials.store = 'redis';
    const redis = (credentials.redis ??= {}) as Record<string, unknown>;
    redis.url = overrides.redisUrl;
  }
  if (overrides.upstreamUrl !== undefined) {
    const upstreams = section('upstreams');
    const names = Object.keys(upstreams);
    // The override names no upstream: it replaces `accounts`, or the only one there is.
    const name =
      names.includes('accounts') || names.length === 0
        ? 'accounts'
        : names.length === 1
          ? names[0]
          : undefined;
    if (name === undefined) {
      problems.push(
        '--upstream-url: several upstreams are configured and none is named "accounts"',
      );
    } else {
      const upstream = (upstreams[name] ??= {}) as Record<string, unknown>;
      upstream.url = overrides.upstreamUrl;
    }
  }
}

function crossCheck(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const paths = new Map<string, string>();
  config.routes.forEach((route, i) => {
    if (names.has(route.name))
      problems.push(`routes[${i}].name: duplicate route name ${route.name}`);
    names.add(route.name);
    if (config.upstreams[route.upstream] === undefined) {
      problems.push(`routes[${i}].upstream: no upstream named ${route.upstream}`);
    }
    route.paths.forEach((path, j) => {
      const owner = paths.get(path);
      if (owner !== undefined)
        problems.push(`routes[${i}].paths[${j}]: ${path} is already a path of route ${owner}`);
      paths.set(path, route.name);
      if (RESERVED_PATHS.has(path))
        problems.push(`routes[${i}].paths[${j}]: ${path} is served by the gateway itself`);
    });
  });
  const issuerNames = new Set<string>();
  config.auth.bearer.issuers.forEach((issuer, i) => {
    if (issuerNames.has(issuer.name))
      problems.push(`auth.bearer.issuers[${i}].name: duplicate name ${issuer.name}`);
    issuerNames.add(issuer.name);
  });
  const { redis } = config.credentials;
  if (redis.mode !== 'standalone' && redis.nodes.length === 0) {
    problems.push(`credentials.redis.nodes: ${redis.mode} mode needs at least one host:port`);
  }
  // The multi-key scripts touch several keys at once: on Cluster they must share a slot.
  if (redis.mode === 'cluster' && !/\{[^}]+\}/.test(redis.keyPrefix)) {
    problems.push('credentials.redis.keyPrefix: cluster mode needs a hash tag such as {ag}:');
  }
  if (config.server.headersTimeoutMs > config.server.requestTimeoutMs) {
    problems.push('server.headersTimeoutMs: must not exceed server.requestTimeoutMs');
  }
  if (
    config.admin.enabled &&
    config.admin.port !== 0 &&
    config.admin.port === config.server.port &&
    config.admin.host === config.server.host
  ) {
    problems.push('admin.port: must differ from server.port');
  }
  return problems;
}

/** Paths of the gateway's own endpoints, which a configured route may not shadow. */
export const RESERVED_PATHS: ReadonlySet<string> = new Set([
  '/keys',
  '/auth/token',
  '/.well-known/jwks.json',
]);

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

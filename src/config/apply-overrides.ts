import { isIPv6 } from 'node:net';
import { isHost, redisSchema, serverSchema, upstreamSchema } from './config-schema.js';

/** A setting given outside the file, and the flag or variable it was given as. */
export interface Override {
  readonly value: string;
  /** `--listen`, `GATEWAY_LISTEN`, …: what a problem with the value names. */
  readonly from: string;
}

/** Settings given on the command line or in GATEWAY_* variables; they win over the file. */
export interface ConfigOverrides {
  /** PORT or HOST:PORT: `server.host`, `server.port`. */
  listen?: Override | undefined;
  /** PORT or HOST:PORT: `admin.host`, `admin.port`, and `admin.enabled: true`. */
  adminListen?: Override | undefined;
  /** `credentials.redis.url`, and `credentials.store: redis`. */
  redisUrl?: Override | undefined;
  /** The `url` of the upstream named `accounts`, or of the only upstream. */
  upstreamUrl?: Override | undefined;
  /** `serve --workers`: a whole number from 1 to 256, or `auto`. */
  workers?: Override | undefined;
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const LISTEN_RULE =
  'must be PORT or HOST:PORT (IPv6 in brackets: [::1]:8080), the port from 0 to 65535';
const REDIS_URL_RULE = 'must be a redis:// or rediss:// URL';
const UPSTREAM_URL_RULE = 'must be an http:// or https:// URL, or builtin';
const WORKERS_RULE = 'must be a whole number from 1 to 256, or auto';

/**
 * `8080`, `127.0.0.1:8080`, `localhost:8080` or `[::1]:8080`; undefined for anything else:
 * an IPv6 address without brackets (`::1` would read as host `:` and port 1), or a host that
 * is neither a host name nor an IP address.
 */
export function parseListen(value: string): { host?: string; port: number } | undefined {
  const match = /^(?:(?:\[([^\]]+)\]|([^:[\]]+)):)?(\d{1,5})$/.exec(value);
  const port = Number(match?.[3]);
  if (match === null || port > 65_535) return undefined;
  const [, ipv6, host] = match;
  if (ipv6 !== undefined) return isIPv6(ipv6) ? { host: ipv6, port } : undefined;
  if (host === undefined) return { port };
  return isHost(host) ? { host, port } : undefined;
}

/**
 * Lays the overrides over the file's tree before the schema reads it, and returns the
 * problems of their values, each naming its flag or variable: the file is not what is
 * wrong, so no problem of a value given outside it names a key of the file. A value with a
 * problem is left out, and a section the file spells as something other than a mapping is
 * left as it is, so the file's own settings are still reported as written.
 */
export function applyOverrides(tree: unknown, overrides: ConfigOverrides): string[] {
  const problems: string[] = [];
  // A tree that is not a mapping takes nothing (the schema reports it); the values are
  // still checked.
  const root: Mapping = isMapping(tree) ? tree : {};
  /** The mapping at `name` of `parent`, made when absent; undefined when it is not one. */
  const section = (parent: Mapping | undefined, name: string): Mapping | undefined => {
    if (parent === undefined) return undefined;
    const value = (parent[name] ??= {});
    return isMapping(value) ? value : undefined;
  };
  const listenAt = (override: Override | undefined, name: 'server' | 'admin'): void => {
    if (override === undefined) return;
    const address = parseListen(override.value);
    if (address === undefined) {
      problems.push(`${override.from}: ${LISTEN_RULE}`);
      return;
    }
    const target = section(root, name);
    if (target === undefined) return;
    if (address.host !== undefined) target.host = address.host;
    target.port = address.port;
    // An address for the admin port asks for one, whatever the file says.
    if (name === 'admin') target.enabled = true;
  };
  listenAt(overrides.listen, 'server');
  listenAt(overrides.adminListen, 'admin');

  const { redisUrl, upstreamUrl, workers } = overrides;
  /** The schema's verdict on an override's value; its problem, named after the flag, noted. */
  const valid = <T>(
    override: Override,
    schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } },
    rule: string,
  ): { data: T } | undefined => {
    const checked = schema.safeParse(override.value);
    if (checked.success) return { data: checked.data };
    problems.push(`${override.from}: ${rule}`);
    return undefined;
  };
  if (redisUrl !== undefined && valid(redisUrl, redisSchema.shape.url, REDIS_URL_RULE)) {
    const credentials = section(root, 'credentials');
    const redis = section(credentials, 'redis');
    if (credentials !== undefined) credentials.store = 'redis';
    if (redis !== undefined) redis.url = redisUrl.value;
  }
  const count =
    workers === undefined ? undefined : valid(workers, serverSchema.shape.workers, WORKERS_RULE);
  if (count !== undefined) {
    const server = section(root, 'server');
    if (server !== undefined) server.workers = count.data;
  }
  if (
    upstreamUrl !== undefined &&
    valid(upstreamUrl, upstreamSchema.shape.url, UPSTREAM_URL_RULE)
  ) {
    const problem = setUpstreamUrl(section(root, 'upstreams'), upstreamUrl);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * The override names no upstream: it replaces `accounts`, or the only one there is. An
 * upstream entry that is not a mapping is left for the schema to report.
 */
function setUpstreamUrl(upstreams: Mapping | undefined, override: Override): string | undefined {
  if (upstreams === undefined) return undefined;
  const names = Object.keys(upstreams);
  const name =
    names.includes('accounts') || names.length === 0
      ? 'accounts'
      : names.length === 1
        ? names[0]
        : undefined;
  if (name === undefined)
    return `${override.from}: several upstreams are configured and none is named "accounts"`;
  const upstream = (upstreams[name] ??= {});
  if (isMapping(upstream)) upstream.url = override.value;
  return undefined;
}

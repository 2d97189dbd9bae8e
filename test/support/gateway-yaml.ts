import { stringify } from 'yaml';
import type { z } from 'zod';
import type { configSchema } from '../../src/config/config-schema.js';
import { FORWARDING_ENGINE } from './forwarding-engine.js';
import { TEST_BCRYPT_COST } from './seed-redis.js';

/** A config file's content as config-schema reads it: every section and setting optional. */
export type GatewayConfigInput = z.input<typeof configSchema>;

export interface GatewayYamlOptions {
  /** upstreams.accounts.url (`builtin` for the reference upstream). */
  upstreamUrl?: string;
  /** The Redis store at `url`, under the test's own key prefix; without it, the memory store. */
  redis?: { url: string; keyPrefix: string };
  /** tokens.signingKey: a PKCS#8 PEM (see generateSigningKey). */
  signingKeyPem?: string;
  /**
   * Any other settings, laid over what the options above write: objects merge key by key,
   * anything else (a value, an array such as `routes`) replaces.
   */
  config?: GatewayConfigInput;
}

/**
 * The one way tests write a gateway's YAML. Always: the admin port on 0 (gateways running
 * side by side never collide), bcrypt cost 4 for what the gateway hashes itself and no count
 * of pairs ending soon (unless `config` asks for one); the
 * options add the upstream, the store and the signing key. The result is block-style YAML,
 * so further top-level sections may still be appended as text.
 */
export function gatewayYaml(options: GatewayYamlOptions = {}): string {
  const base: GatewayConfigInput = {
    admin: { port: 0 },
    ...(options.upstreamUrl === undefined
      ? {}
      : { upstreams: { accounts: { url: options.upstreamUrl } } }),
    credentials: {
      store: options.redis === undefined ? 'memory' : 'redis',
      bcryptCost: TEST_BCRYPT_COST,
      ...(options.redis === undefined
        ? {}
        : { redis: { url: options.redis.url, keyPrefix: options.redis.keyPrefix } }),
    },
    ...(options.signingKeyPem === undefined
      ? {}
      : { tokens: { signingKey: options.signingKeyPem } }),
    // The count of pairs ending soon walks the whole store in the background: on the run's
    // shared Redis, every gateway's walk would cross every other file's keys, and its commands
    // those of tests that watch what a gateway sends. The tests of the count turn it on.
    keys: { expiringCountIntervalSec: 0 },
  };
  return stringify(withEngine(merge(base, options.config ?? {})));
}

/** Every upstream that names no engine gets the one the suite runs against, if any. */
function withEngine(config: unknown): unknown {
  if (FORWARDING_ENGINE === undefined || !isPlainObject(config)) return config;
  const upstreams = config.upstreams;
  if (!isPlainObject(upstreams)) return config;
  const engine = FORWARDING_ENGINE;
  return {
    ...config,
    upstreams: Object.fromEntries(
      Object.entries(upstreams).map(([name, upstream]) => [
        name,
        isPlainObject(upstream) && upstream.engine === undefined
          ? { ...upstream, engine }
          : upstream,
      ]),
    ),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [name, value] of Object.entries(over)) out[name] = merge(base[name], value);
  return out;
}

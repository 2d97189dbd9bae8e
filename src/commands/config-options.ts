import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import type { ConfigOverrides, Override } from '../config/apply-overrides.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { loadConfigFile } from '../config/load-config.js';
import type { Environment } from '../config/substitute-env.js';

/** The embedded default: config/gateway.yaml of the installed package. */
export const DEFAULT_CONFIG_FILE = fileURLToPath(
  new URL('../../config/gateway.yaml', import.meta.url),
);

export interface ConfigArgs {
  config: string;
  listen: string | undefined;
  'admin-listen': string | undefined;
  'redis-url': string | undefined;
  'upstream-url': string | undefined;
}

/** --config and the four overrides, each also read from a GATEWAY_* variable. */
export function withConfigOptions<T>(yargs: Argv<T>) {
  return (
    yargs
      .option('config', {
        alias: 'c',
        type: 'string',
        default: defaultConfigFile(),
        defaultDescription: 'config/gateway.yaml',
        describe: 'YAML configuration file (env GATEWAY_CONFIG)',
      })
      // Keeps completion from offering the alias as `--c`; help still shows `-c, --config`.
      .hide('c')
      .option('listen', {
        type: 'string',
        describe: 'PORT or HOST:PORT to serve on (env GATEWAY_LISTEN)',
      })
      .option('admin-listen', {
        type: 'string',
        describe:
          'PORT or HOST:PORT of the admin port, whatever the file says (env GATEWAY_ADMIN_LISTEN)',
      })
      .option('redis-url', {
        type: 'string',
        describe: 'use the Redis store at this URL (env GATEWAY_REDIS_URL)',
      })
      .option('upstream-url', {
        type: 'string',
        describe: 'URL of the accounts upstream (env GATEWAY_UPSTREAM_URL)',
      })
  );
}

/** The file read without --config: GATEWAY_CONFIG, else the embedded default. */
export function defaultConfigFile(env: Environment = process.env): string {
  return setting(env.GATEWAY_CONFIG) ?? DEFAULT_CONFIG_FILE;
}

/**
 * What overrides the file: each flag, else its GATEWAY_* variable, with the name it was given
 * under, so a bad value is reported as that flag's or variable's. `--workers` has no variable.
 */
export function configOverrides(
  args: Omit<ConfigArgs, 'config'> & { workers?: string | undefined },
  env: Environment = process.env,
): ConfigOverrides {
  const pick = (flag: keyof typeof args, variable?: string): Override | undefined => {
    const given = args[flag];
    if (given !== undefined) return { value: given, from: `--${flag}` };
    if (variable === undefined) return undefined;
    const value = setting(env[variable]);
    return value === undefined ? undefined : { value, from: variable };
  };
  return {
    listen: pick('listen', 'GATEWAY_LISTEN'),
    adminListen: pick('admin-listen', 'GATEWAY_ADMIN_LISTEN'),
    redisUrl: pick('redis-url', 'GATEWAY_REDIS_URL'),
    upstreamUrl: pick('upstream-url', 'GATEWAY_UPSTREAM_URL'),
    workers: pick('workers'),
  };
}

/** An empty variable counts as unset, as `${VAR:-default}` in the file treats it. */
function setting(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

/** The configuration of `--config` with every override (`--workers` too, when given). */
export function loadConfigFromArgs(
  args: ConfigArgs & { workers?: string | undefined },
  env: Environment = process.env,
): GatewayConfig {
  return loadConfigFile(args.config, env, configOverrides(args, env));
}

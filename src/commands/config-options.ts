import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import type { GatewayConfig } from '../config/config-schema.js';
import { loadConfigFile, type ConfigOverrides } from '../config/load-config.js';
import type { Environment } from '../config/substitute-env.js';

/** The embedded default: config/gateway.yaml of the installed package. */
export const DEFAULT_CONFIG_FILE = fileURLToPath(
  new URL('../../config/gateway.yaml', import.meta.url),
);

export interface ConfigArgs {
  config: string;
  listen: string | undefined;
  'redis-url': string | undefined;
  'upstream-url': string | undefined;
}

/** --config and the three overrides, each also read from a GATEWAY_* variable. */
export function withConfigOptions<T>(yargs: Argv<T>) {
  return yargs
    .option('config', {
      alias: 'c',
      type: 'string',
      default: defaultConfigFile(),
      defaultDescription: 'config/gateway.yaml',
      describe: 'YAML configuration file (env GATEWAY_CONFIG)',
    })
    .option('listen', {
      type: 'string',
      describe: 'PORT or HOST:PORT to serve on (env GATEWAY_LISTEN)',
    })
    .option('redis-url', {
      type: 'string',
      describe: 'use the Redis store at this URL (env GATEWAY_REDIS_URL)',
    })
    .option('upstream-url', {
      type: 'string',
      describe: 'URL of the accounts upstream (env GATEWAY_UPSTREAM_URL)',
    });
}

/** The file read without --config: GATEWAY_CONFIG, else the embedded default. */
export function defaultConfigFile(env: Environment = process.env): string {
  return setting(env.GATEWAY_CONFIG) ?? DEFAULT_CONFIG_FILE;
}

/** What overrides the file: each flag, else its GATEWAY_* variable. */
export function configOverrides(
  args: Omit<ConfigArgs, 'config'>,
  env: Environment = process.env,
): ConfigOverrides {
  return {
    listen: args.listen ?? setting(env.GATEWAY_LISTEN),
    redisUrl: args['redis-url'] ?? setting(env.GATEWAY_REDIS_URL),
    upstreamUrl: args['upstream-url'] ?? setting(env.GATEWAY_UPSTREAM_URL),
  };
}

/** An empty variable counts as unset, as `${VAR:-default}` in the file treats it. */
function setting(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

export function loadConfigFromArgs(
  args: ConfigArgs,
  env: Environment = process.env,
): GatewayConfig {
  return loadConfigFile(args.config, env, configOverrides(args, env));
}

import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import type { GatewayConfig } from '../config/config-schema.js';
import { loadConfigFile } from '../config/load-config.js';

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
      default: process.env.GATEWAY_CONFIG ?? DEFAULT_CONFIG_FILE,
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

export function loadConfigFromArgs(
  args: ConfigArgs,
  env: NodeJS.ProcessEnv = process.env,
): GatewayConfig {
  return loadConfigFile(args.config, env, {
    listen: args.listen ?? env.GATEWAY_LISTEN,
    redisUrl: args['redis-url'] ?? env.GATEWAY_REDIS_URL,
    upstreamUrl: args['upstream-url'] ?? env.GATEWAY_UPSTREAM_URL,
  });
}

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
  listen?: string | undefined;
  'admin-listen'?: string | undefined;
  'redis-url'?: string | undefined;
  'upstream-url'?: string | undefined;
}

/** A flag that overrides the file, each also read from its GATEWAY_* variable. */
export type OverrideFlag = Exclude<keyof ConfigArgs, 'config'>;

/**
 * What each kind of command takes: a command that opens only the store has no use for the
 * listeners or the upstream, so its --help does not offer them and their variables do not
 * reach it (a bad GATEWAY_LISTEN is no reason to refuse `keys list`).
 */
export const STORE_FLAGS: readonly OverrideFlag[] = ['redis-url'];
export const SERVE_FLAGS: readonly OverrideFlag[] = [
  'listen',
  'admin-listen',
  'redis-url',
  'upstream-url',
];

/** --config alone (env GATEWAY_CONFIG). */
export function withConfigFile<T>(yargs: Argv<T>) {
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
  );
}

/** --config and --redis-url: the commands that work on the store. */
export function withStoreOptions<T>(yargs: Argv<T>) {
  return withConfigFile(yargs).option('redis-url', {
    type: 'string',
    describe: 'use the Redis store at this URL (env GATEWAY_REDIS_URL)',
  });
}

/** --config and the four overrides of what `serve` runs. */
export function withServeOverrides<T>(yargs: Argv<T>) {
  return withStoreOptions(yargs)
    .option('listen', {
      type: 'string',
      describe: 'PORT or HOST:PORT to serve on (env GATEWAY_LISTEN)',
    })
    .option('admin-listen', {
      type: 'string',
      describe:
        'PORT or HOST:PORT of the admin port, whatever the file says (env GATEWAY_ADMIN_LISTEN)',
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

/**
 * What overrides the file: each of the command's `flags`, else its GATEWAY_* variable, with
 * the name it was given under, so a bad value is reported as that flag's or variable's.
 * `--workers` has no variable.
 */
export function configOverrides(
  args: Omit<ConfigArgs, 'config'> & { workers?: string | undefined },
  env: Environment = process.env,
  flags: readonly OverrideFlag[] = SERVE_FLAGS,
): ConfigOverrides {
  const pick = (flag: keyof typeof args, variable?: string): Override | undefined => {
    if (flag !== 'workers' && !flags.includes(flag)) return undefined;
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

/**
 * The configuration of `--config` with the overrides of `flags` (those of `serve` unless
 * told), and `--workers` when given.
 */
export function loadConfigFromArgs(
  args: ConfigArgs & { workers?: string | undefined },
  env: Environment = process.env,
  flags: readonly OverrideFlag[] = SERVE_FLAGS,
): GatewayConfig {
  return loadConfigFile(args.config, env, configOverrides(args, env, flags));
}

/** --workers, for serve (and check and config, which validate or show what serve would run). */
export function withWorkersOption<T>(yargs: Argv<T>) {
  return withServeOverrides(yargs).option('workers', {
    type: 'string',
    describe: 'processes serving the API port: a number, or auto (one per core)',
  });
}

/** The configuration with every override, --workers included. */
export function loadServeConfig(args: ConfigArgs & { workers: string | undefined }): GatewayConfig {
  return loadConfigFromArgs(args);
}

/** The configuration a store's command reads: --redis-url (or its variable) its only override. */
export function loadStoreConfig(args: ConfigArgs): GatewayConfig {
  return loadConfigFromArgs(args, process.env, STORE_FLAGS);
}

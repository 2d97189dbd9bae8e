import type { Argv } from 'yargs';
import type { GatewayConfig } from '../config/config-schema.js';
import { withStore, type AdminStore, type Output } from './admin-commands.js';
import { loadStoreConfig, withStoreOptions, type ConfigArgs } from './config-options.js';

/** The store's commands: --config, --redis-url and --json. */
export function withJson<T>(yargs: Argv<T>) {
  return withStoreOptions(yargs).option('json', {
    type: 'boolean',
    default: false,
    describe: 'print JSON',
  });
}

/** What a command prints goes to stdout, as text or (`--json`) as JSON. */
export function stdoutOutput(json: boolean): Output {
  return { json, write: (text) => process.stdout.write(text) };
}

export type AdminAction = (
  config: GatewayConfig,
  admin: AdminStore,
  output: Output,
) => Promise<void>;

/** Loads the config, opens its store, runs the command, closes the store. */
export async function runAdmin(
  args: ConfigArgs & { json: boolean },
  action: AdminAction,
): Promise<void> {
  const config = loadStoreConfig(args);
  const output = stdoutOutput(args.json);
  await withStore(config, (admin) => action(config, admin, output));
}

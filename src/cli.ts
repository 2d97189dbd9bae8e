#!/usr/bin/env node
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError } from './config/load-config.js';
import { loadConfigFromArgs, withConfigOptions } from './commands/config-options.js';
import { serve } from './commands/serve.js';

/** Exit codes: 0 success, 1 runtime failure, 2 invalid configuration or usage. */
async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  await yargs(argv)
    .scriptName('accounts-gateway')
    .env('GATEWAY')
    .command(
      'serve',
      'Run the gateway',
      (y) => withConfigOptions(y),
      async (args) => {
        exitCode = await serve(loadConfigFromArgs(args));
      },
    )
    .command(
      'check',
      'Validate a configuration file and exit',
      (y) => withConfigOptions(y),
      (args) => {
        loadConfigFromArgs(args);
        process.stdout.write(`${args.config}: configuration is valid\n`);
      },
    )
    .demandCommand(1, 'Name a command: serve, check, keys or users.')
    .strict()
    .help()
    .fail((message, error) => {
      throw error ?? new UsageError(message);
    })
    .parseAsync();
  return exitCode;
}

class UsageError extends Error {}

main(hideBin(process.argv)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError || error instanceof UsageError) {
      process.stderr.write(`accounts-gateway: ${error.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(
        `accounts-gateway: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exitCode = 1;
    }
  },
);

import { checkConnections } from './check-connections.js';
import { checkKeyMaterial } from './check-key-material.js';
import type { CliCommand } from './cli-command.js';
import { CliError, EXIT } from './cli-error.js';
import { loadServeConfig, withWorkersOption } from './config-options.js';

/** `check [--connect]`: validates what serve would run; --connect also tries what it reaches. */
export const checkCli: CliCommand = (yargs) =>
  yargs.command(
    'check',
    'Validate a configuration file and exit',
    (y) =>
      withWorkersOption(y)
        .option('connect', {
          type: 'boolean',
          default: false,
          describe: 'also try Redis and every upstream, and say what answered',
        })
        .example(
          '$0 check -c gateway.yaml --connect',
          'validate, then try Redis and the upstreams',
        ),
    async (args) => {
      const config = loadServeConfig(args);
      await checkKeyMaterial(config, args.config, { startFiles: true });
      process.stdout.write(`${args.config}: configuration is valid\n`);
      if (!args.connect) return;
      const checks = await checkConnections(config);
      for (const check of checks) process.stdout.write(`${check.line}\n`);
      const failed = checks.filter((check) => !check.answered).length;
      if (failed > 0)
        throw new CliError(`${failed} of ${checks.length} did not answer`, EXIT.failure);
    },
  );

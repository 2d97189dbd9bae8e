import { showConfig } from '../config/show-config.js';
import type { CliCommand } from './cli-command.js';
import { loadServeConfig, withWorkersOption } from './config-options.js';

/** `config [--json]`: the configuration serve would run, secrets redacted. */
export const configCli: CliCommand = (yargs) =>
  yargs.command(
    'config',
    'Print the configuration serve would run: defaults filled in, ${ENV} and overrides applied, secrets redacted',
    (y) =>
      withWorkersOption(y)
        .option('json', { type: 'boolean', default: false, describe: 'print JSON, not YAML' })
        .example('$0 config -c gateway.yaml', 'every setting in effect, as YAML')
        .example('$0 config --json | jq .server', 'one section'),
    (args) => {
      const config = loadServeConfig(args);
      process.stdout.write(showConfig(config, args.json ? 'json' : 'yaml', args.config));
    },
  );

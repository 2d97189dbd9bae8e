import type { CliCommand } from './cli-command.js';
import { loadConfigFromArgs, withConfigFile } from './config-options.js';
import { checkCostOption, hashPasswordCommand } from './hash-password.js';
import { readPassword } from './read-password.js';

/** `hash-password [--cost N]`: a bcrypt hash for the web application's own users. */
export const hashPasswordCli: CliCommand = (yargs) =>
  yargs.command(
    'hash-password',
    'Print a bcrypt hash of a secret read from stdin or a prompt (for the web application)',
    (c) =>
      withConfigFile(c)
        .option('cost', {
          type: 'string',
          describe: 'bcrypt cost (default: credentials.bcryptCost of the configuration)',
        })
        .example('$0 hash-password < secret.txt', 'its first line, at the configured cost')
        .example('$0 hash-password --cost 12', 'asks twice without echo, then prints the hash'),
    async (args) => {
      // The cost is checked before a prompt asks for anything.
      const cost =
        args.cost === undefined
          ? loadConfigFromArgs(args, process.env, []).credentials.bcryptCost
          : checkCostOption(args.cost);
      const secret = await readPassword('secret');
      await hashPasswordCommand(secret, cost, (text) => process.stdout.write(text));
    },
  );

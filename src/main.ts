import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { checkCli } from './commands/check-command.js';
import { withCommands } from './commands/cli-command.js';
import { CliError, EXIT } from './commands/cli-error.js';
import { completionCli } from './commands/completion-command.js';
import { configCli } from './commands/config-command.js';
import { hashPasswordCli } from './commands/hash-password-command.js';
import { keysCli } from './commands/keys-command.js';
import { migrateCli } from './commands/migrate-command.js';
import { openapiCli } from './commands/openapi-command.js';
import { serveCli, type ServeRun } from './commands/serve-command.js';
import { usersCli } from './commands/users-command.js';
import { ConfigError } from './config/load-config.js';

/** Set by `serve`: once it runs, the process exits as soon as it ends, with its exit code. */
const run: ServeRun = { serving: false, exitCode: EXIT.ok };

/**
 * With the entry (cli.ts, which refuses an old Node), the only place that reads argv, sets
 * the exit code or exits.
 */
async function main(argv: string[]): Promise<number> {
  const cli = yargs(argv).scriptName('accounts-gateway');
  await withCommands(cli, [
    serveCli(run),
    checkCli,
    configCli,
    keysCli,
    usersCli,
    hashPasswordCli,
    migrateCli,
    openapiCli,
    completionCli,
  ])
    .example('$0 completion >> ~/.bashrc', 'complete commands and options in bash')
    .demandCommand(
      1,
      'Name a command: serve, check, config, keys, users, hash-password, migrate, openapi or completion.',
    )
    .strict()
    .help()
    .fail((message, error) => {
      throw error ?? new CliError(message, EXIT.usage);
    })
    .parseAsync();
  return run.exitCode;
}

// A reader that stops early (`openapi | head -1`) closes the pipe, and the next write fails
// with EPIPE: an error event nobody heard, a stack trace and exit 1. The command ends quietly
// instead, and with 0 rather than 141 (what a shell reports for a tool killed by SIGPIPE, a
// signal Node ignores): the reader had all it wanted, whatever the command changed is done,
// and a script under `set -o pipefail` should not fail for a `| head`. `serve` logs to a
// pipe it must not outlive silently, so it keeps Node's behaviour.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' || run.serving) throw error;
  process.exit(EXIT.ok);
});

function finish(code: number): void {
  process.exitCode = code;
  // The supervisor and a worker resolve or reject only after their log lines are written.
  if (run.serving) process.exit(code);
}

main(hideBin(process.argv)).then(finish, (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`accounts-gateway: ${message}\n`);
  finish(
    error instanceof CliError
      ? error.exitCode
      : error instanceof ConfigError
        ? EXIT.usage
        : EXIT.failure,
  );
});

import type { CliCommand } from './cli-command.js';

/**
 * `completion`: a command of ours rather than yargs' .completion(), which prints the script
 * even for `completion --help`; the script's `--get-yargs-completions` needs no registration.
 * Declared on the top-level yargs, whose script it prints.
 */
export const completionCli: CliCommand = (yargs) =>
  yargs.command(
    'completion',
    'Print a bash/zsh completion script (accounts-gateway must be on PATH)',
    (c) => c.example('$0 completion >> ~/.bashrc', 'complete commands and options in bash'),
    () => {
      yargs.showCompletionScript();
    },
  );

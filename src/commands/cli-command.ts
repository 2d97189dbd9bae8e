import type { Argv } from 'yargs';

/**
 * One command of the CLI, as main.ts wires it: it declares itself (options, descriptions,
 * examples, handler) on the yargs it is given and returns it. A command group declares its
 * subcommands the same way.
 */
export type CliCommand = (yargs: Argv) => Argv;

/** Declares `commands` on `yargs`, in order: the order --help lists them in. */
export function withCommands(yargs: Argv, commands: readonly CliCommand[]): Argv {
  return commands.reduce((declared, command) => command(declared), yargs);
}

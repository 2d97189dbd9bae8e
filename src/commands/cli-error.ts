/** Exit codes of the CLI (documented in docs/cli.md). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  conflict: 4,
  /** Ctrl-C at a prompt: 128 + SIGINT's number, what a shell reports for a command it interrupts. */
  cancelled: 130,
} as const;

/** A failure the CLI reports in one line and turns into an exit code. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

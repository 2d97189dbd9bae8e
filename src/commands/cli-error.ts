/** Exit codes of the CLI (documented in docs/cli.md). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  conflict: 4,
  /** Ctrl-C at a prompt: 128 + SIGINT's number, as a shell reports a command it interrupted. */
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

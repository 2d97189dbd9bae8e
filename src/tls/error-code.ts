/** A file system error's code for a log line or a refusal ('error' when it has none). */
export function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
}

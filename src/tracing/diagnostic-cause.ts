/** Longest cause a span-export warning carries: a sentence, not a payload. */
const MAX_CAUSE_CHARS = 200;

/**
 * The short sentence of an SDK diagnostic. The SDK's error handler hands an exception over
 * as a JSON blob of all its properties (stack included); a log line wants its message only,
 * on one line and bounded.
 */
export function diagnosticCause(message: unknown): string {
  let text = message instanceof Error ? message.message : String(message);
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      const inner = (parsed as { message?: unknown } | null)?.message;
      text = typeof inner === 'string' ? inner : 'unknown error';
    } catch {
      // Not JSON after all: the text itself, cut below.
    }
  }
  const line = text.split('\n', 1)[0]?.trim() ?? '';
  if (line === '') return 'unknown error';
  return line.length > MAX_CAUSE_CHARS ? `${line.slice(0, MAX_CAUSE_CHARS)}…` : line;
}

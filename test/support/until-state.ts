/**
 * Reads a state again every `intervalMs` until `accept` takes it, and resolves with what
 * `accept` returned. For states with no event to await (a Cluster's agreement, a replica's
 * link): each read is a round of commands, the interval only keeps the loop from spinning.
 * A read that throws (a node going down mid-read) counts as a state not yet accepted. The
 * guard ends a wait that never comes with what was awaited and the last state seen, instead
 * of a bare test timeout; it is generous and asserts nothing about how long the wait took.
 */
export async function untilState<S, T>(
  what: string,
  read: () => Promise<S>,
  accept: (state: S) => T | undefined,
  { intervalMs = 50, guardMs = 60_000 }: { intervalMs?: number; guardMs?: number } = {},
): Promise<T> {
  const started = performance.now();
  let last: unknown;
  for (;;) {
    try {
      const state = await read();
      last = state;
      const accepted = accept(state);
      if (accepted !== undefined) return accepted;
    } catch (error) {
      last = error instanceof Error ? error.message : error;
    }
    if (performance.now() - started > guardMs)
      throw new Error(`still waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

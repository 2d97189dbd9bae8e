const INTERVAL_MS = 60_000;

/** Passes one warning on; `suppressed`: how many of its kind were held back since the last. */
export type Warn = (subject: string, reason: string, suppressed: number) => void;

/**
 * One warning per subject (an issuer) a minute at most, the rest counted into the next: a
 * dependency that keeps failing shows in the log without a line per attempt. The state lives
 * as long as the returned function, so a caller that keeps it across reloads keeps the pace.
 */
export function throttledWarnings(
  warn: Warn,
  now: () => number = Date.now,
): (subject: string) => (reason: string) => void {
  const subjects = new Map<string, { lastMs: number; suppressed: number }>();
  return (subject) => (reason) => {
    let state = subjects.get(subject);
    if (state === undefined) {
      state = { lastMs: -Infinity, suppressed: 0 };
      subjects.set(subject, state);
    }
    const at = now();
    if (at - state.lastMs < INTERVAL_MS) {
      state.suppressed += 1;
      return;
    }
    warn(subject, reason, state.suppressed);
    state.lastMs = at;
    state.suppressed = 0;
  };
}

import type { ExpiringCount } from './expiring-pairs.js';

/**
 * A count older than this many intervals is not shown: its counter stopped (every gateway
 * that could count is gone or cannot reach the store), and a stale figure would read as fresh.
 */
export const SHOWN_INTERVALS = 3;

/**
 * The count of pairs ending soon, kept fresh in the background: a timer asks the store for
 * its latest count (CredentialStore.countExpiring, which counts again when that one is an
 * interval old) and shows it, never on a request's path. One count at a time: a tick that
 * comes while the last one still walks the store is skipped.
 */
export interface ExpiringCounter {
  /** One count now, unless one runs (then nothing): what each tick does. Never rejects. */
  countNow(): Promise<void>;
  /** Stops the timer; a count under way is not shown, and its failure not reported. */
  stop(): void;
}

export interface ExpiringCounterOptions {
  /** The store's countExpiring. */
  count: (maxAgeMs: number) => Promise<ExpiringCount | undefined>;
  /** Where the count goes (the metric); undefined when none is recent enough. */
  show: (within: ExpiringCount['within'] | undefined) => void;
  /** The timer's period, and the age at which the store counts again. > 0. */
  intervalMs: number;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** A count that failed (store down): the last one shown stays until it is too old. */
  onError?: (error: unknown) => void;
  /** Off in tests that call countNow() themselves. */
  timer?: boolean;
}

export function createExpiringCounter(options: ExpiringCounterOptions): ExpiringCounter {
  const now = options.now ?? Date.now;
  const { intervalMs } = options;
  let running = false;
  let stopped = false;
  let shownAtMs: number | undefined;
  const countNow = async (): Promise<void> => {
    if (running || stopped) return;
    running = true;
    try {
      const count = await options.count(intervalMs);
      if (stopped) return;
      const recent =
        count !== undefined && now() - count.countedAtMs < SHOWN_INTERVALS * intervalMs;
      shownAtMs = recent ? count.countedAtMs : undefined;
      options.show(recent ? count.within : undefined);
    } catch (error) {
      if (stopped) return;
      if (shownAtMs !== undefined && now() - shownAtMs >= SHOWN_INTERVALS * intervalMs) {
        shownAtMs = undefined;
        options.show(undefined);
      }
      options.onError?.(error);
    } finally {
      running = false;
    }
  };
  const timer =
    options.timer === false ? undefined : setInterval(() => void countNow(), intervalMs).unref();
  return {
    countNow,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

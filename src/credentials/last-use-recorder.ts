/**
 * When each pair was last used, kept without a store write per request: a successful Basic
 * check notes the pair here (one Map lookup while it was noted within the interval), and a
 * timer writes what was noted in one batch per interval. So each instance writes a pair's
 * `last_used_at` at most once per `intervalMs`, and the time written is the first use noted
 * in that interval: at most one interval (plus the batch's delay) older than the last use.
 */
export interface LastUseRecorder {
  /** Notes a use of `key` now. Synchronous and cheap: it runs on every cached request. */
  touch(key: string): void;
  /** Writes what was noted and not yet written (one batch). Never rejects. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left: on shutdown, and when a reload replaces it. */
  close(): Promise<void>;
}

export interface LastUseRecorderOptions {
  /** Writes a batch: key id -> ISO 8601 UTC time of use. The store's recordLastUse. */
  write: (uses: ReadonlyMap<string, string>) => Promise<void>;
  /** At most one write per pair per this many milliseconds; also the timer's period. > 0. */
  intervalMs: number;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
  /** A failed batch (store down): its uses are kept for the next one. */
  onError?: (error: unknown) => void;
  /** Off in tests that call flush() themselves. */
  timer?: boolean;
}

/**
 * Uses handed to one write. A batch is written a slice at a time, one after another: 45,000
 * pairs noted in a minute, turned into one write, held the event loop for 140 ms (their ISO
 * times, the store's per-pair work and the garbage of both all at once), a stall every
 * request in flight waited out once a minute. A slice is a few milliseconds, and the Redis
 * store (backends/redis/last-use.ts) writes at most this many pairs per script run.
 */
export const USES_PER_WRITE = 500;

export function createLastUseRecorder(options: LastUseRecorderOptions): LastUseRecorder {
  const now = options.now ?? Date.now;
  const { intervalMs } = options;
  // key -> the time before which a further use is not noted again.
  const quietUntil = new Map<string, number>();
  // key -> time of the first use noted in the current interval, waiting for the batch.
  let pending = new Map<string, number>();
  let writing: Promise<void> | undefined;

  /** Kept for the next batch, unless a later use was noted meanwhile. */
  const keep = (uses: Iterable<readonly [string, number]>): void => {
    for (const [key, usedAt] of uses) if (!pending.has(key)) pending.set(key, usedAt);
  };

  /** The slices of `batch` in turn; on a failure, that slice and the rest are kept. */
  const writeSlices = async (batch: ReadonlyMap<string, number>): Promise<void> => {
    const remaining = batch.entries();
    for (;;) {
      const slice: (readonly [string, number])[] = [];
      for (const use of remaining) {
        slice.push(use);
        if (slice.length === USES_PER_WRITE) break;
      }
      if (slice.length === 0) return;
      const uses = new Map<string, string>();
      for (const [key, usedAt] of slice) uses.set(key, new Date(usedAt).toISOString());
      try {
        await options.write(uses);
      } catch (error) {
        keep(slice);
        keep(remaining);
        options.onError?.(error);
        return;
      }
    }
  };

  const flush = async (): Promise<void> => {
    // One batch at a time: a slow store must not pile batches up.
    if (writing !== undefined) await writing;
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const at = now();
    // Forget pairs whose quiet time is over: the map holds only recently used pairs.
    for (const [key, until] of quietUntil) if (until <= at) quietUntil.delete(key);
    writing = writeSlices(batch);
    try {
      await writing;
    } finally {
      writing = undefined;
    }
  };

  const timer =
    options.timer === false ? undefined : setInterval(() => void flush(), intervalMs).unref();

  return {
    touch(key) {
      const at = now();
      const until = quietUntil.get(key);
      if (until !== undefined && at < until) return;
      quietUntil.set(key, at + intervalMs);
      pending.set(key, at);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

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

export function createLastUseRecorder(options: LastUseRecorderOptions): LastUseRecorder {
  const now = options.now ?? Date.now;
  const { intervalMs } = options;
  // key -> the time before which a further use is not noted again.
  const quietUntil = new Map<string, number>();
  // key -> time of the first use noted in the current interval, waiting for the batch.
  let pending = new Map<string, number>();
  let writing: Promise<void> | undefined;

  const flush = async (): Promise<void> => {
    // One batch at a time: a slow store must not pile batches up.
    if (writing !== undefined) await writing;
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const at = now();
    // Forget pairs whose quiet time is over: the map holds only recently used pairs.
    for (const [key, until] of quietUntil) if (until <= at) quietUntil.delete(key);
    const uses = new Map<string, string>();
    for (const [key, usedAt] of batch) uses.set(key, new Date(usedAt).toISOString());
    writing = options.write(uses).then(
      () => undefined,
      (error: unknown) => {
        // Kept for the next batch, unless a later use was noted meanwhile.
        for (const [key, usedAt] of batch) if (!pending.has(key)) pending.set(key, usedAt);
        options.onError?.(error);
      },
    );
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

/** One request of a trickle: when it was sent and answered (performance.now()), and its status. */
export interface TrickleSample {
  readonly sentMs: number;
  readonly answeredMs: number;
  /** The HTTP status; 0 when the request failed without an answer. */
  readonly status: number;
}

export interface Trickle {
  /** Every answer so far, in order. */
  readonly samples: readonly TrickleSample[];
  /** Resolves with the first sample (already in or still to come) that `matches`. */
  next(matches: (sample: TrickleSample) => boolean): Promise<TrickleSample>;
  /** Stops sending; resolves once the request in flight has its answer. */
  stop(): Promise<readonly TrickleSample[]>;
}

/**
 * Sends `request` one at a time, starting one every `intervalMs` or as soon as the previous
 * one is answered if it took longer: light, steady traffic that shows when a gateway stops
 * and starts serving. The pacing shapes the load; nothing waits on it for a state.
 */
export function startTrickle(request: () => Promise<number>, intervalMs = 50): Trickle {
  const samples: TrickleSample[] = [];
  const waiters: {
    matches: (sample: TrickleSample) => boolean;
    resolve: (s: TrickleSample) => void;
  }[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentMs = performance.now();
      const status = await request().catch(() => 0);
      const sample = { sentMs, answeredMs: performance.now(), status };
      samples.push(sample);
      for (const waiter of waiters.filter((w) => w.matches(sample))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(sample);
      }
      const rest = sentMs + intervalMs - performance.now();
      if (rest > 0 && !stopped) await new Promise((resolve) => setTimeout(resolve, rest));
    }
  })();
  return {
    samples,
    next(matches) {
      const seen = samples.find(matches);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ matches, resolve }));
    },
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

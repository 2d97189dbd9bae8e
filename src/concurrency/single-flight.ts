/** Runs one task per key at a time; callers asking for a key already in flight share its result. */
export interface SingleFlight<T> {
  run(key: string, task: () => Promise<T>): Promise<T>;
}

export function createSingleFlight<T>(): SingleFlight<T> {
  const inFlight = new Map<string, Promise<T>>();
  return {
    run(key, task) {
      const pending = inFlight.get(key);
      if (pending !== undefined) return pending;
      const started = task().finally(() => inFlight.delete(key));
      inFlight.set(key, started);
      return started;
    },
  };
}

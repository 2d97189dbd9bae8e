/**
 * Bounds expensive work: at most `maxConcurrent` tasks run, at most `maxQueued` wait, and
 * anything beyond is refused at once (the caller answers 503) instead of piling up.
 */
export interface WorkLimiter {
  run<T>(task: () => Promise<T>): Promise<T>;
  readonly running: number;
  readonly queued: number;
}

export class WorkRefusedError extends Error {
  constructor() {
    super('work limiter queue is full');
    this.name = 'WorkRefusedError';
  }
}

export function createWorkLimiter(maxConcurrent: number, maxQueued: number): WorkLimiter {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next === undefined) running -= 1;
    else next();
  };
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (running >= maxConcurrent) {
        if (waiting.length >= maxQueued) throw new WorkRefusedError();
        await new Promise<void>((resolve) => waiting.push(resolve));
      } else {
        running += 1;
      }
      try {
        return await task();
      } finally {
        release();
      }
    },
    get running() {
      return running;
    },
    get queued() {
      return waiting.length;
    },
  };
}

/** How the primary spaces the replacements of a worker that keeps dying. */
export interface BackoffOptions {
  /** The wait before the first replacement. */
  readonly initialMs: number;
  /** The longest wait: each further death doubles the wait up to this. */
  readonly maxMs: number;
  /** A worker that stayed up this long was healthy: its next death waits initialMs again. */
  readonly stableAfterMs: number;
}

export const RESTART_BACKOFF: BackoffOptions = {
  initialMs: 100,
  maxMs: 10_000,
  stableAfterMs: 10_000,
};

/**
 * The waits before replacing one worker slot: 100 ms, 200 ms, 400 ms ... up to 10 s for a
 * crash loop, back to 100 ms once a worker had stayed up for 10 s. Pure: the caller says how
 * long the dead worker ran.
 */
export class RestartBackoff {
  private nextMs: number;

  constructor(private readonly options: BackoffOptions = RESTART_BACKOFF) {
    this.nextMs = options.initialMs;
  }

  /** The wait before replacing a worker that died after running `uptimeMs`. */
  delayAfter(uptimeMs: number): number {
    if (uptimeMs >= this.options.stableAfterMs) this.nextMs = this.options.initialMs;
    const delay = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, this.options.maxMs);
    return delay;
  }
}

import { describe, expect, it } from 'vitest';
import { RESTART_BACKOFF, RestartBackoff } from '../../../src/lifecycle/restart-backoff.js';

describe('the restart backoff of a worker slot', () => {
  it('waits 100 ms, then doubles for each quick death, up to 10 s', () => {
    const backoff = new RestartBackoff();
    const waits = Array.from({ length: 10 }, () => backoff.delayAfter(50));
    expect(waits).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
  });

  it('starts again from 100 ms once a worker stayed up 10 s', () => {
    const backoff = new RestartBackoff();
    for (let i = 0; i < 6; i += 1) backoff.delayAfter(1_000);
    expect(backoff.delayAfter(RESTART_BACKOFF.stableAfterMs)).toBe(100);
    expect(backoff.delayAfter(9_999)).toBe(200);
    expect(backoff.delayAfter(60_000)).toBe(100);
  });

  it('follows the options it is given', () => {
    const backoff = new RestartBackoff({ initialMs: 10, maxMs: 35, stableAfterMs: 1_000 });
    expect([0, 0, 0, 0].map((uptime) => backoff.delayAfter(uptime))).toEqual([10, 20, 35, 35]);
  });
});

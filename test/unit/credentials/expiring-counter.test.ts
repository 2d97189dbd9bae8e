import { describe, expect, it } from 'vitest';
import { createExpiringCounter } from '../../../src/credentials/expiring-counter.js';
import type { ExpiringCount } from '../../../src/credentials/expiring-pairs.js';
import { deferred } from '../../support/deferred.js';

const INTERVAL_MS = 60_000;
const count = (countedAtMs: number, week = 1, month = 2): ExpiringCount => ({
  countedAtMs,
  within: { '7d': week, '30d': month },
});

/** A counter on a clock the test moves, without its timer, and what it showed. */
function counterOn(answer: () => Promise<ExpiringCount | undefined>) {
  const clock = { ms: 1_000_000 };
  const shown: (ExpiringCount['within'] | undefined)[] = [];
  const errors: unknown[] = [];
  const asked: number[] = [];
  const counter = createExpiringCounter({
    count: (maxAgeMs) => {
      asked.push(maxAgeMs);
      return answer();
    },
    show: (within) => shown.push(within),
    intervalMs: INTERVAL_MS,
    now: () => clock.ms,
    onError: (error) => errors.push(error),
    timer: false,
  });
  return { counter, clock, shown, errors, asked };
}

describe('the background count of pairs ending soon', () => {
  it('asks the store for a count an interval old at most, and shows it', async () => {
    const c = counterOn(() => Promise.resolve(count(1_000_000 - 5_000)));
    await c.counter.countNow();
    expect(c.asked).toEqual([INTERVAL_MS]);
    expect(c.shown).toEqual([{ '7d': 1, '30d': 2 }]);
  });

  it('shows nothing while the store has no count, or only one three intervals old', async () => {
    let answer: ExpiringCount | undefined;
    const c = counterOn(() => Promise.resolve(answer));
    await c.counter.countNow();
    answer = count(1_000_000 - 3 * INTERVAL_MS + 1);
    await c.counter.countNow();
    answer = count(1_000_000 - 3 * INTERVAL_MS);
    await c.counter.countNow();
    expect(c.shown).toEqual([undefined, { '7d': 1, '30d': 2 }, undefined]);
  });

  it('runs one count at a time: a tick during a walk is skipped', async () => {
    const walk = deferred<ExpiringCount | undefined>();
    const c = counterOn(() => walk.promise);
    const first = c.counter.countNow();
    await c.counter.countNow();
    expect(c.asked).toHaveLength(1);
    walk.resolve(count(1_000_000));
    await first;
    expect(c.shown).toEqual([{ '7d': 1, '30d': 2 }]);
    await c.counter.countNow();
    expect(c.asked).toHaveLength(2);
  });

  it('reports a failed count, keeps the last one shown until it is three intervals old, then hides it', async () => {
    let fail = false;
    const c = counterOn(() =>
      fail ? Promise.reject(new Error('down')) : Promise.resolve(count(1_000_000)),
    );
    await c.counter.countNow();
    fail = true;
    c.clock.ms += 2 * INTERVAL_MS;
    await c.counter.countNow();
    expect(c.shown).toEqual([{ '7d': 1, '30d': 2 }]);
    c.clock.ms += INTERVAL_MS;
    await c.counter.countNow();
    expect(c.shown).toEqual([{ '7d': 1, '30d': 2 }, undefined]);
    expect(c.errors).toHaveLength(2);
  });

  it('shows nothing and reports nothing once stopped, even for a count under way', async () => {
    const walk = deferred<ExpiringCount | undefined>();
    const c = counterOn(() => walk.promise);
    const running = c.counter.countNow();
    c.counter.stop();
    walk.reject(new Error('store closed'));
    await running;
    await c.counter.countNow();
    expect([c.shown, c.errors, c.asked.length]).toEqual([[], [], 1]);
  });
});

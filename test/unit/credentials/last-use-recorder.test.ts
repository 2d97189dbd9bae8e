import { describe, expect, it } from 'vitest';
import {
  createLastUseRecorder,
  USES_PER_WRITE,
} from '../../../src/credentials/last-use-recorder.js';

const START = Date.parse('2030-01-01T00:00:00.000Z');

function recorder(intervalMs = 60_000) {
  const clock = { ms: START };
  const writes: Map<string, string>[] = [];
  let failing = false;
  /** Writes that succeed before `failing` applies; Infinity: all of them. */
  let failAfter = Infinity;
  const lastUse = createLastUseRecorder({
    write: (uses) => {
      if (failing && writes.length >= failAfter) return Promise.reject(new Error('store down'));
      writes.push(new Map(uses));
      return Promise.resolve();
    },
    intervalMs,
    now: () => clock.ms,
    timer: false,
  });
  return {
    lastUse,
    clock,
    writes,
    fail: (on: boolean, afterWrites = 0) => {
      failing = on;
      failAfter = afterWrites;
    },
  };
}

/** Keys ak_0 … ak_<count - 1>, each used once, a millisecond apart. */
function touchMany(lastUse: { touch(key: string): void }, clock: { ms: number }, count: number) {
  for (let i = 0; i < count; i += 1) {
    lastUse.touch(`ak_${i}`);
    clock.ms += 1;
  }
}

describe('createLastUseRecorder', () => {
  it('writes nothing per use: one batch with each pair once, at the first use of the interval', async () => {
    const { lastUse, clock, writes } = recorder();
    for (let i = 0; i < 1000; i += 1) {
      lastUse.touch(i % 2 === 0 ? 'ak_a' : 'ak_b');
      clock.ms += 10;
    }
    expect(writes).toEqual([]);
    await lastUse.flush();
    expect(writes).toEqual([
      new Map([
        ['ak_a', '2030-01-01T00:00:00.000Z'],
        ['ak_b', '2030-01-01T00:00:00.010Z'],
      ]),
    ]);
  });

  it('writes a pair used all the time at most once per interval, by the injected clock', async () => {
    const { lastUse, clock, writes } = recorder(60_000);
    // Ten minutes of a use every 100 ms, with a batch every 5 seconds.
    for (let t = 0; t < 600_000; t += 100) {
      clock.ms = START + t;
      lastUse.touch('ak_busy');
      if (t % 5_000 === 0) await lastUse.flush();
    }
    await lastUse.flush();
    const times = writes.flatMap((batch) => [...batch.values()]).map(Date.parse);
    expect(times).toHaveLength(10);
    for (let i = 1; i < times.length; i += 1)
      expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(60_000);
  });

  it('notes a pair again once its interval has passed', async () => {
    const { lastUse, clock, writes } = recorder(1_000);
    lastUse.touch('ak_a');
    await lastUse.flush();
    clock.ms += 999;
    lastUse.touch('ak_a');
    await lastUse.flush();
    expect(writes).toHaveLength(1);
    clock.ms += 1;
    lastUse.touch('ak_a');
    await lastUse.flush();
    expect(writes.map((batch) => batch.get('ak_a'))).toEqual([
      '2030-01-01T00:00:00.000Z',
      '2030-01-01T00:00:01.000Z',
    ]);
  });

  it('keeps the uses of a failed batch for the next one', async () => {
    const { lastUse, writes, fail } = recorder();
    lastUse.touch('ak_a');
    fail(true);
    await expect(lastUse.flush()).resolves.toBeUndefined();
    fail(false);
    await lastUse.flush();
    expect(writes).toEqual([new Map([['ak_a', '2030-01-01T00:00:00.000Z']])]);
  });

  it('writes a large batch in slices, one after another, each pair once', async () => {
    const { lastUse, clock, writes } = recorder();
    const count = USES_PER_WRITE * 2 + 7;
    touchMany(lastUse, clock, count);
    await lastUse.flush();
    expect(writes.map((slice) => slice.size)).toEqual([USES_PER_WRITE, USES_PER_WRITE, 7]);
    const written = writes.flatMap((slice) => [...slice]);
    expect(new Map(written).size).toBe(count);
    expect(written.at(-1)).toEqual([`ak_${count - 1}`, new Date(START + count - 1).toISOString()]);
  });

  it('keeps the slice that failed and those after it, not those written', async () => {
    const { lastUse, clock, writes, fail } = recorder();
    touchMany(lastUse, clock, USES_PER_WRITE * 3);
    fail(true, 1);
    await lastUse.flush();
    expect(writes).toHaveLength(1);
    fail(false);
    await lastUse.flush();
    const keys = writes.map((slice) => [...slice.keys()]);
    expect(keys.slice(1).flat()).toEqual(
      Array.from({ length: USES_PER_WRITE * 2 }, (_, i) => `ak_${USES_PER_WRITE + i}`),
    );
  });

  it('writes what is left on close', async () => {
    const { lastUse, writes } = recorder();
    lastUse.touch('ak_a');
    await lastUse.close();
    expect(writes).toHaveLength(1);
  });

  it('writes on its own timer', async () => {
    const writes: ReadonlyMap<string, string>[] = [];
    const written = new Promise<void>((resolve) => {
      const lastUse = createLastUseRecorder({
        write: (uses) => {
          writes.push(uses);
          resolve();
          return Promise.resolve();
        },
        intervalMs: 20,
      });
      lastUse.touch('ak_timer');
    });
    await written;
    expect([...(writes[0]?.keys() ?? [])]).toEqual(['ak_timer']);
  });
});

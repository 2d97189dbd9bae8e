import { describe, expect, it } from 'vitest';
import { createSingleFlight } from '../../../src/concurrency/single-flight.js';
import { deferred } from '../../support/deferred.js';

describe('createSingleFlight', () => {
  it('runs the task once for concurrent callers of one key and shares its result', async () => {
    const flight = createSingleFlight<{ value: number }>();
    const gate = deferred<{ value: number }>();
    let calls = 0;
    const task = () => {
      calls += 1;
      return gate.promise;
    };
    const a = flight.run('k', task);
    const b = flight.run('k', task);
    const c = flight.run('k', task);
    expect(calls).toBe(1);
    const shared = { value: 42 };
    gate.resolve(shared);
    const results = await Promise.all([a, b, c]);
    expect(results).toEqual([shared, shared, shared]);
    expect(results[0]).toBe(shared);
    expect(results[2]).toBe(shared);
  });

  it('runs different keys independently', async () => {
    const flight = createSingleFlight<string>();
    const calls: string[] = [];
    const task = (key: string) => () => {
      calls.push(key);
      return Promise.resolve(key.toUpperCase());
    };
    const results = await Promise.all([flight.run('a', task('a')), flight.run('b', task('b'))]);
    expect(results).toEqual(['A', 'B']);
    expect(calls).toEqual(['a', 'b']);
  });

  it('frees the key once the task has resolved, so the next call runs again', async () => {
    const flight = createSingleFlight<number>();
    let calls = 0;
    const task = () => Promise.resolve((calls += 1));
    expect(await flight.run('k', task)).toBe(1);
    expect(await flight.run('k', task)).toBe(2);
  });

  it('shares a rejection with every waiting caller and frees the key afterwards', async () => {
    const flight = createSingleFlight<number>();
    const gate = deferred<number>();
    const failure = new Error('bcrypt failed');
    let calls = 0;
    const a = flight.run('k', () => {
      calls += 1;
      return gate.promise;
    });
    const b = flight.run('k', () => {
      calls += 1;
      return Promise.resolve(0);
    });
    gate.reject(failure);
    await expect(a).rejects.toBe(failure);
    await expect(b).rejects.toBe(failure);
    expect(calls).toBe(1);
    await expect(flight.run('k', () => Promise.resolve(7))).resolves.toBe(7);
  });
});

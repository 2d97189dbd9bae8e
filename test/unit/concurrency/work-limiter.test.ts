import { describe, expect, it } from 'vitest';
import { createWorkLimiter, WorkRefusedError } from '../../../src/concurrency/work-limiter.js';
import { deferred } from '../../support/deferred.js';

/** Lets queued microtasks and promise continuations run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('createWorkLimiter', () => {
  it('runs at most maxConcurrent tasks and queues the next ones', async () => {
    const limiter = createWorkLimiter(2, 5);
    const gates = [deferred<number>(), deferred<number>(), deferred<number>()];
    const started: number[] = [];
    const results = gates.map((gate, i) =>
      limiter.run(() => {
        started.push(i);
        return gate.promise;
      }),
    );
    await settle();
    expect(started).toEqual([0, 1]);
    expect([limiter.running, limiter.queued]).toEqual([2, 1]);

    gates[0]?.resolve(10);
    await settle();
    expect(started).toEqual([0, 1, 2]);
    expect([limiter.running, limiter.queued]).toEqual([2, 0]);

    gates[1]?.resolve(11);
    gates[2]?.resolve(12);
    expect(await Promise.all(results)).toEqual([10, 11, 12]);
    expect([limiter.running, limiter.queued]).toEqual([0, 0]);
  });

  it('refuses work at once with WorkRefusedError when the queue is full', async () => {
    const limiter = createWorkLimiter(1, 1);
    const gate = deferred<string>();
    let calls = 0;
    const task = () => {
      calls += 1;
      return gate.promise;
    };
    const first = limiter.run(task);
    const second = limiter.run(task);
    await expect(limiter.run(task)).rejects.toBeInstanceOf(WorkRefusedError);
    expect([calls, limiter.running, limiter.queued]).toEqual([1, 1, 1]);
    gate.resolve('done');
    expect(await Promise.all([first, second])).toEqual(['done', 'done']);
    expect(calls).toBe(2);
  });

  it('refuses as soon as every slot is busy when maxQueued is 0', async () => {
    const limiter = createWorkLimiter(1, 0);
    const gate = deferred<void>();
    const first = limiter.run(() => gate.promise);
    await expect(limiter.run(() => Promise.resolve())).rejects.toThrow(WorkRefusedError);
    gate.resolve();
    await first;
    await expect(limiter.run(() => Promise.resolve('again'))).resolves.toBe('again');
  });

  it('starts queued tasks in arrival order', async () => {
    const limiter = createWorkLimiter(1, 10);
    const gate = deferred<void>();
    const order: string[] = [];
    const first = limiter.run(() => gate.promise);
    const rest = ['a', 'b', 'c'].map((name) =>
      limiter.run(() => {
        order.push(name);
        return Promise.resolve();
      }),
    );
    gate.resolve();
    await Promise.all([first, ...rest]);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('frees the slot when a task rejects and passes the rejection on', async () => {
    const limiter = createWorkLimiter(1, 1);
    const failure = new Error('task failed');
    const gate = deferred<string>();
    const failing = limiter.run(() => gate.promise);
    const next = limiter.run(() => Promise.resolve('next ran'));
    gate.reject(failure);
    await expect(failing).rejects.toBe(failure);
    await expect(next).resolves.toBe('next ran');
    expect([limiter.running, limiter.queued]).toEqual([0, 0]);
  });

  it('frees the slot when a task throws synchronously', async () => {
    const limiter = createWorkLimiter(1, 0);
    await expect(
      limiter.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(limiter.running).toBe(0);
    await expect(limiter.run(() => Promise.resolve(1))).resolves.toBe(1);
  });

  it('WorkRefusedError is an Error with its own name', () => {
    const error = new WorkRefusedError();
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('WorkRefusedError');
  });
});

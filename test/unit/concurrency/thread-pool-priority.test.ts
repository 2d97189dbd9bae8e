import { describe, expect, it } from 'vitest';
import {
  lowerThreadPoolPriority,
  type ThreadAccess,
} from '../../../src/concurrency/thread-pool-priority.js';

function fakeThreads(names: Record<string, string>, refuse: string[] = []) {
  const set = new Map<number, number>();
  const access: ThreadAccess = {
    threads: () => Object.keys(names),
    nameOf: (thread) => {
      const name = names[thread];
      if (name === undefined) throw new Error('ENOENT');
      return name;
    },
    setNice: (thread, nice) => {
      if (refuse.includes(String(thread))) throw new Error('EPERM');
      set.set(thread, nice);
    },
  };
  return { access, set };
}

describe('lowerThreadPoolPriority', () => {
  it("sets the nice value of libuv's pool threads and of no other thread", () => {
    const { access, set } = fakeThreads({
      '100': 'node',
      '101': 'V8Worker',
      '102': 'libuv-worker',
      '103': 'libuv-worker',
    });
    expect(lowerThreadPoolPriority(19, access)).toBe(2);
    expect([...set]).toEqual([
      [102, 19],
      [103, 19],
    ]);
  });

  it('skips a thread that ended or refuses, and goes on with the others', () => {
    const { access, set } = fakeThreads(
      { '7': 'libuv-worker', '8': 'libuv-worker', '9': 'libuv-worker' },
      ['8'],
    );
    const ended = {
      ...access,
      nameOf: (t: string) => (t === '9' ? access.nameOf('gone') : access.nameOf(t)),
    };
    expect(lowerThreadPoolPriority(10, ended)).toBe(1);
    expect([...set]).toEqual([[7, 10]]);
  });

  it('does nothing where threads cannot be listed (no /proc/self/task)', () => {
    const access: ThreadAccess = {
      threads: () => {
        throw new Error('ENOENT');
      },
      nameOf: () => 'libuv-worker',
      setNice: () => {
        throw new Error('never called');
      },
    };
    expect(lowerThreadPoolPriority(19, access)).toBe(0);
  });
});

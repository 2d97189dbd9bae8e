import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The name libuv gives the threads of its pool (where bcrypt, fs and dns.lookup run). */
const POOL_THREAD = 'libuv-worker';

export interface ThreadAccess {
  /** The thread ids of this process. */
  threads(): string[];
  /** A thread's name, as the kernel has it. */
  nameOf(thread: string): string;
  setNice(thread: number, nice: number): void;
}

const linuxThreads: ThreadAccess = {
  threads: () => readdirSync('/proc/self/task'),
  nameOf: (thread) => readFileSync(`/proc/self/task/${thread}/comm`, 'utf8').trimEnd(),
  setNice: (thread, nice) => setPriority(thread, nice),
};

/**
 * Gives libuv's thread pool a lower CPU priority than the event loop. bcrypt runs there: when
 * the cores are busy, a flood of wrong secrets then takes the CPU the event loop leaves, not the
 * CPU cached requests need (measured: see docs/benchmark.md's mixed section), and with idle cores
 * bcrypt still runs at full speed, since nice only weighs threads that compete.
 *
 * On Linux nice is per thread and setpriority(PRIO_PROCESS, tid) sets one thread's; the pool's
 * threads all start with the first work handed to it, so call this after one bcrypt run.
 * Elsewhere (no /proc/self/task) it does nothing. Returns the number of threads set.
 */
export function lowerThreadPoolPriority(nice: number, access: ThreadAccess = linuxThreads): number {
  let threads: string[];
  try {
    threads = access.threads();
  } catch {
    return 0;
  }
  let set = 0;
  for (const thread of threads) {
    try {
      if (access.nameOf(thread) !== POOL_THREAD) continue;
      access.setNice(Number(thread), nice);
      set += 1;
    } catch {
      // A thread that ended meanwhile, or a system that refuses: the priority is an
      // optimisation, never a reason not to serve.
    }
  }
  return set;
}

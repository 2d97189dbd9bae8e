import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { GatewayConfig } from '../config/config-schema.js';
import type { SupervisedTarget } from './supervisor.js';
import { createLogger, type Logger } from '../observability/create-logger.js';
import type { ReloadOutcome } from '../observability/metrics.js';
import { allStopped, createSetState, live, order } from './set-state.js';
import { fork } from './set-workers.js';

export { combineReadiness, type SlotReadiness } from './set-admin.js';

/** `server.workers` as a number of processes: `auto` is one per core the process may use. */
export function resolveWorkerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? availableParallelism() : setting;
}

/**
 * The primary's logger: written at once, one line per write, since the workers' relayed
 * lines share its stream; every line says it is the primary's.
 */
export function primaryLogger(level: string): Logger {
  return createLogger(level, process.stdout).child({ pid: process.pid, role: 'primary' });
}

/**
 * `serve --workers N`, as the supervisor (lifecycle/supervisor.ts, which the CLI hands it
 * to) drives it: N workers that share the API port (node:cluster, round-robin: the primary
 * accepts and hands each connection to the next worker; measured level with SO_REUSEPORT
 * and ahead of SCHED_NONE, see docs/operations.md). A worker that dies is replaced with an
 * exponential backoff (set-workers.ts); the set has one admin port (metrics summed over the
 * workers, readiness of all: set-admin.ts). Signals become orders: a drain of every worker,
 * SIGKILL for a second signal, and a configuration validated here handed to every worker, or
 * to none. Every log line of the workers goes through this process whole, so lines of two
 * processes never interleave.
 */
export function workerSet(
  initial: GatewayConfig,
  workers: number,
  logger: Logger,
): SupervisedTarget {
  const { set, starting, stopped } = createSetState(initial, workers, logger);
  return {
    start(): Promise<void> {
      cluster.setupPrimary({ silent: true, serialization: 'advanced' });
      // Round-robin unless NODE_CLUSTER_SCHED_POLICY says otherwise (Node's default off Windows).
      const scheduling = cluster.schedulingPolicy === cluster.SCHED_RR ? 'round-robin' : 'none';
      logger.info({ workers: set.slots.length, scheduling }, 'starting workers');
      for (const slot of set.slots) fork(set, slot);
      return starting;
    },
    drain(): Promise<number> {
      // A failed start drains the set already, and ends in its failure.
      if (set.phase === 'failing' || set.phase === 'ended') return stopped;
      set.phase = 'stopping';
      for (const slot of set.slots) {
        clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
      }
      for (const slot of live(set)) order(slot, { type: 'drain' });
      if (live(set).length === 0) void allStopped(set);
      return stopped;
    },
    reload(next: GatewayConfig): Promise<void> {
      if (set.phase !== 'starting' && set.phase !== 'running') return Promise.resolve();
      set.config = next;
      // Workers not started yet get it with their start.
      const running = live(set).filter((slot) => slot.state !== 'forked');
      for (const slot of running) order(slot, { type: 'reload', config: next });
      logger.info({ workers: running.length }, 'configuration validated; sent to every worker');
      return Promise.resolve();
    },
    inFlight: () => set.slots.reduce((sum, slot) => sum + slot.inFlight, 0),
    abandon(): void {
      set.phase = 'ended';
      for (const slot of live(set)) slot.worker?.process.kill('SIGKILL');
    },
    drainingFields: () => ({ workers: live(set).length }),
    notReloadedMessage: 'configuration not reloaded; every worker keeps the running one',
    // Applied: validated and sent to every worker (one that fails to apply it is replaced).
    countReload: (outcome: ReloadOutcome): void => set.own.reloads.count(outcome),
  };
}

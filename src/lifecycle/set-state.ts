import type { Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/config-schema.js';
import { closeServer } from '../http/listen.js';
import type { Logger } from '../observability/create-logger.js';
import { createSetReloads } from '../observability/metrics.js';
import type { Answer, ToWorker } from './messages.js';
import { RestartBackoff } from './restart-backoff.js';

/** How long /readyz and /metrics wait for a worker's answer before counting it out. */
const ANSWER_TIMEOUT_MS = 1_500;

export interface Slot {
  /** 1..N, as the logs name it. */
  readonly index: number;
  readonly backoff: RestartBackoff;
  worker: Worker | undefined;
  /** down: no worker; forked: not yet said hello; started: given its configuration. */
  state: 'down' | 'forked' | 'started' | 'listening';
  startedAt: number;
  /** Requests the worker reported in flight during a drain. */
  inFlight: number;
  /** The pending replacement of a dead worker. */
  restartTimer: NodeJS.Timeout | undefined;
  /** Answers awaited from the current worker, by question id. */
  readonly pending: Map<number, (answer: Answer | undefined) => void>;
  /** A worker that replaces a dead one: its start is logged as a restart. */
  replacement: boolean;
}

/** The state of a set of workers, as the primary keeps it. */
export interface WorkerSetState {
  /** The configuration handed to each worker that starts (the last one validated). */
  config: GatewayConfig;
  phase: 'starting' | 'running' | 'stopping' | 'failing' | 'ended';
  readonly slots: readonly Slot[];
  readonly logger: Logger;
  /** Reloads are the primary's decision: counted here once, not once per worker. */
  readonly own: ReturnType<typeof createSetReloads>;
  nextQuestion: number;
  /** A worker exited other than 0 during the drain: the set exits 1. */
  drainFailed: boolean;
  /** Why the start failed, once it has. */
  failure: unknown;
  admin: Server | undefined;
  /** Settle what start() and drain() return. */
  readonly started: () => void;
  readonly startFailure: (error: unknown) => void;
  readonly drained: (code: number) => void;
}

/** A new set's state, with the promises its start and its drain resolve. */
export function createSetState(
  config: GatewayConfig,
  workers: number,
  logger: Logger,
): { set: WorkerSetState; starting: Promise<void>; stopped: Promise<number> } {
  let started: () => void = () => undefined;
  let startFailure: (error: unknown) => void = () => undefined;
  const starting = new Promise<void>((resolve, reject) => {
    started = resolve;
    startFailure = reject;
  });
  let drained: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (drained = resolve));
  const slots: Slot[] = Array.from({ length: workers }, (_, i) => ({
    index: i + 1,
    backoff: new RestartBackoff(),
    worker: undefined,
    state: 'down',
    startedAt: 0,
    inFlight: 0,
    restartTimer: undefined,
    pending: new Map(),
    replacement: false,
  }));
  const set: WorkerSetState = {
    config,
    phase: 'starting',
    slots,
    logger,
    own: createSetReloads(),
    nextQuestion: 0,
    drainFailed: false,
    failure: undefined,
    admin: undefined,
    started,
    startFailure,
    drained,
  };
  return { set, starting, stopped };
}

export function live(set: WorkerSetState): Slot[] {
  return set.slots.filter((slot) => slot.worker !== undefined);
}

export function order(slot: Slot, message: ToWorker): void {
  if (slot.worker?.isConnected() === true) slot.worker.send(message);
}

/** Asks one worker; undefined when it does not answer in time or is gone meanwhile. */
export function ask(
  set: WorkerSetState,
  slot: Slot,
  type: 'readiness?' | 'metrics?',
): Promise<Answer | undefined> {
  if (slot.worker?.isConnected() !== true) return Promise.resolve(undefined);
  const id = (set.nextQuestion += 1);
  return new Promise((resolve) => {
    const timer = setTimeout(() => answer(undefined), ANSWER_TIMEOUT_MS);
    const answer = (value: Answer | undefined): void => {
      clearTimeout(timer);
      slot.pending.delete(id);
      resolve(value);
    };
    slot.pending.set(id, answer);
    order(slot, { type, id });
  });
}

/** The set could not start: every worker drains (none has had traffic to speak of). */
export function startFailed(set: WorkerSetState, error: unknown): void {
  if (set.phase !== 'starting') return;
  set.phase = 'failing';
  set.failure = error;
  for (const slot of live(set)) order(slot, { type: 'drain' });
  if (live(set).length === 0) void allStopped(set);
}

/** The last worker has stopped: close the admin port, then settle the start or the drain. */
export async function allStopped(set: WorkerSetState): Promise<void> {
  if (set.phase === 'ended') return;
  const failed = set.phase === 'failing';
  set.phase = 'ended';
  if (set.admin !== undefined) await closeServer(set.admin);
  if (failed) set.startFailure(set.failure);
  else set.drained(set.drainFailed ? 1 : 0);
}

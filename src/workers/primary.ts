import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { createAdminServer, type NotReadyCode } from '../admin/admin-server.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { closeServer, listenOn } from '../http/listen.js';
import { createLogger, type Logger } from '../observability/create-logger.js';
import {
  createAggregatedMetrics,
  createSetReloads,
  type MetricsSnapshot,
  type ReloadOutcome,
} from '../observability/metrics.js';
import { createLineRelay } from './line-relay.js';
import {
  WORKER_ENV,
  type Answer,
  type FromWorker,
  type ToWorker,
  type WorkerReadiness,
} from './messages.js';
import { RestartBackoff } from './restart-backoff.js';

/** `server.workers` as a number of processes: `auto` is one per core the process may use. */
export function resolveWorkerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? availableParallelism() : setting;
}

/** How long /readyz and /metrics wait for a worker's answer before counting it out. */
const ANSWER_TIMEOUT_MS = 1_500;

interface Slot {
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
 * exponential backoff; the set has one admin port (metrics summed over the workers,
 * readiness of all). Signals become orders: a drain of every worker, SIGKILL for a second
 * signal, and a configuration validated here handed to every worker, or to none. Every log
 * line of the workers goes through this process whole, so lines of two processes never
 * interleave.
 */
export function workerSet(initial: GatewayConfig, workers: number, logger: Logger) {
  let config = initial;
  let phase: 'starting' | 'running' | 'stopping' | 'failing' | 'ended' = 'starting';
  let nextQuestion = 0;
  let drainFailed = false;

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
  // Reloads are the primary's decision: counted here once, not once per worker.
  const own = createSetReloads();
  const live = (): Slot[] => slots.filter((slot) => slot.worker !== undefined);
  const order = (slot: Slot, message: ToWorker): void => {
    if (slot.worker?.isConnected() === true) slot.worker.send(message);
  };

  /** Asks one worker; undefined when it does not answer in time or is gone meanwhile. */
  const ask = (slot: Slot, type: 'readiness?' | 'metrics?'): Promise<Answer | undefined> => {
    if (slot.worker?.isConnected() !== true) return Promise.resolve(undefined);
    const id = (nextQuestion += 1);
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
  };

  const fork = (slot: Slot): void => {
    slot.restartTimer = undefined;
    const worker = cluster.fork({ [WORKER_ENV]: String(slot.index) });
    slot.worker = worker;
    slot.state = 'forked';
    slot.startedAt = Date.now();
    slot.inFlight = 0;
    relay(worker, process.stdout, process.stderr);
    worker.on('message', (message: FromWorker) => onMessage(slot, worker, message));
    // 'close' comes after the exit and after the worker's output has been read to its end.
    worker.process.once('close', (code, signal) => onClose(slot, worker, code, signal));
  };

  const onMessage = (slot: Slot, worker: Worker, message: FromWorker): void => {
    if (slot.worker !== worker) return;
    switch (message.type) {
      case 'hello':
        if (phase === 'stopping' || phase === 'failing') order(slot, { type: 'drain' });
        else {
          order(slot, { type: 'start', config });
          slot.state = 'started';
        }
        break;
      case 'listening':
        slot.state = 'listening';
        if (slot.replacement)
          logger.info({ worker: slot.index, worker_pid: worker.process.pid }, 'worker restarted');
        if (phase === 'starting' && slots.every((s) => s.state === 'listening'))
          void opened(message.port);
        break;
      case 'start-failed':
        if (phase === 'starting') startFailed(new Error(message.message));
        break;
      case 'in-flight':
        slot.inFlight = message.count;
        break;
      case 'readiness':
      case 'metrics':
        slot.pending.get(message.id)?.(message);
        break;
    }
  };

  const onClose = (
    slot: Slot,
    worker: Worker,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void => {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    slot.state = 'down';
    slot.inFlight = 0;
    for (const answer of [...slot.pending.values()]) answer(undefined);
    const pid = worker.process.pid;
    if (phase === 'stopping' || phase === 'failing') {
      if (code !== 0) drainFailed = true;
      logger.info({ worker: slot.index, worker_pid: pid, code, signal }, 'worker stopped');
      if (live().length === 0) void allStopped();
      return;
    }
    if (phase === 'ended') return;
    const uptimeMs = Date.now() - slot.startedAt;
    if (phase === 'starting') {
      logger.error({ worker: slot.index, worker_pid: pid, code, signal }, 'worker died');
      startFailed(
        new Error(
          `worker ${slot.index} exited before listening (${signal ?? `code ${String(code)}`})`,
        ),
      );
      return;
    }
    const delay = slot.backoff.delayAfter(uptimeMs);
    logger.error(
      {
        worker: slot.index,
        worker_pid: pid,
        code,
        signal,
        uptime_ms: uptimeMs,
        restart_in_ms: delay,
      },
      'worker died',
    );
    slot.replacement = true;
    slot.restartTimer = setTimeout(() => fork(slot), delay);
  };

  let admin: Server | undefined;
  let failure: unknown;

  /** Every worker listens: open the admin port, then say the set is up. */
  const opened = async (port: number): Promise<void> => {
    if (config.admin.enabled) {
      admin = createAdminServer({
        metrics: createAggregatedMetrics(
          collectMetrics,
          // A worker missing (being replaced) or a drain makes the set not ready.
          () => phase === 'running' && slots.every((slot) => slot.state === 'listening'),
          own.registry,
        ),
        ready: readiness,
        draining: () => phase !== 'running',
      });
      try {
        const adminPort = await listenOn(admin, config.admin.host, config.admin.port, 'admin port');
        if (phase !== 'starting') return;
        listening(port, adminPort);
      } catch (error) {
        startFailed(error);
      }
    } else if (phase === 'starting') listening(port, undefined);
  };

  const listening = (port: number, adminPort: number | undefined): void => {
    phase = 'running';
    logger.info(
      {
        host: config.server.host,
        port,
        admin_port: adminPort,
        store: config.credentials.store,
        workers: slots.length,
        worker_pids: slots.map((slot) => slot.worker?.process.pid),
      },
      'gateway listening',
    );
    started();
  };

  /** The set could not start: every worker drains (none has had traffic to speak of). */
  const startFailed = (error: unknown): void => {
    if (phase !== 'starting') return;
    phase = 'failing';
    failure = error;
    for (const slot of live()) order(slot, { type: 'drain' });
    if (live().length === 0) void allStopped();
  };

  const allStopped = async (): Promise<void> => {
    if (phase === 'ended') return;
    const failed = phase === 'failing';
    phase = 'ended';
    if (admin !== undefined) await closeServer(admin);
    if (failed) startFailure(failure);
    else drained(drainFailed ? 1 : 0);
  };

  async function readiness(): Promise<boolean | NotReadyCode> {
    const states = await Promise.all(
      slots.map(async (slot): Promise<SlotReadiness> => {
        if (slot.worker === undefined || slot.state !== 'listening') return 'missing';
        const answer = await ask(slot, 'readiness?');
        return answer?.type === 'readiness' ? answer.state : 'silent';
      }),
    );
    return combineReadiness(states);
  }

  async function collectMetrics(): Promise<MetricsSnapshot[]> {
    const answers = await Promise.all(live().map((slot) => ask(slot, 'metrics?')));
    return answers.flatMap((answer) => (answer?.type === 'metrics' ? [answer.metrics] : []));
  }

  return {
    start(): Promise<void> {
      cluster.setupPrimary({ silent: true, serialization: 'advanced' });
      // Round-robin unless NODE_CLUSTER_SCHED_POLICY says otherwise (Node's default off Windows).
      const scheduling = cluster.schedulingPolicy === cluster.SCHED_RR ? 'round-robin' : 'none';
      logger.info({ workers: slots.length, scheduling }, 'starting workers');
      for (const slot of slots) fork(slot);
      return starting;
    },
    drain(): Promise<number> {
      // A failed start drains the set already, and ends in its failure.
      if (phase === 'failing' || phase === 'ended') return stopped;
      phase = 'stopping';
      for (const slot of slots) {
        clearTimeout(slot.restartTimer);
        slot.restartTimer = undefined;
      }
      for (const slot of live()) order(slot, { type: 'drain' });
      if (live().length === 0) void allStopped();
      return stopped;
    },
    reload(next: GatewayConfig): Promise<void> {
      if (phase !== 'starting' && phase !== 'running') return Promise.resolve();
      config = next;
      // Workers not started yet get it with their start.
      const running = live().filter((slot) => slot.state !== 'forked');
      for (const slot of running) order(slot, { type: 'reload', config: next });
      logger.info({ workers: running.length }, 'configuration validated; sent to every worker');
      return Promise.resolve();
    },
    inFlight: () => slots.reduce((sum, slot) => sum + slot.inFlight, 0),
    abandon(): void {
      phase = 'ended';
      for (const slot of live()) slot.worker?.process.kill('SIGKILL');
    },
    drainingFields: () => ({ workers: live().length }),
    notReloadedMessage: 'configuration not reloaded; every worker keeps the running one',
    // Applied: validated and sent to every worker (one that fails to apply it is replaced).
    countReload: (outcome: ReloadOutcome): void => own.reloads.count(outcome),
  };
}

/**
 * What one slot says when /readyz asks: its worker's answer, `missing` when no worker listens
 * in it (being replaced, or still starting), `silent` when the worker did not answer in time.
 */
export type SlotReadiness = WorkerReadiness | 'missing' | 'silent';

/**
 * The set is ready when every slot's worker is: a draining worker makes it `draining`, a
 * store that does not answer `credential_store_unavailable` (false), and a missing or silent
 * worker (capacity the set does not have) `overloaded`.
 */
export function combineReadiness(states: readonly SlotReadiness[]): boolean | NotReadyCode {
  if (states.includes('draining')) return 'draining';
  if (states.includes('store_unavailable')) return false;
  return states.every((state) => state === 'ready') ? true : 'overloaded';
}

/** Sends a worker's stdout and stderr on, whole lines at a time, to this process's own. */
function relay(worker: Worker, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): void {
  for (const [from, to] of [
    [worker.process.stdout, stdout],
    [worker.process.stderr, stderr],
  ] as const) {
    if (from === null) continue;
    const lines = createLineRelay((chunk) => to.write(chunk));
    from.on('data', (chunk: Buffer) => lines.push(chunk));
    from.on('end', () => lines.end());
  }
}

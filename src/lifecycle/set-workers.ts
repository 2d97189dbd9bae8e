import type { ChildProcess } from 'node:child_process';
import cluster, { type Worker } from 'node:cluster';
import { finished } from 'node:stream/promises';
import { createLineRelay } from './line-relay.js';
import { WORKER_ENV, type FromWorker } from './messages.js';
import { opened } from './set-admin.js';
import {
  allStopped,
  live,
  order,
  startFailed,
  type Slot,
  type WorkerSetState,
} from './set-state.js';

/**
 * How long a dead worker's output may take to reach its end before its death is handled anyway.
 * The pipes end when the last process holding them does: a child the worker started (an
 * agent's helper loaded by NODE_OPTIONS, say) may hold them long after the worker is gone.
 */
const OUTPUT_END_WAIT_MS = 1_000;

/** Starts a worker in `slot` (a first one, or the replacement of a dead one). */
export function fork(set: WorkerSetState, slot: Slot): void {
  slot.restartTimer = undefined;
  const worker = cluster.fork({ [WORKER_ENV]: String(slot.index) });
  slot.worker = worker;
  slot.state = 'forked';
  slot.startedAt = Date.now();
  slot.inFlight = 0;
  relay(worker, process.stdout, process.stderr);
  worker.on('message', (message: FromWorker) => onMessage(set, slot, worker, message));
  // Its death is handled at its exit, once its output has been read to its end (its last lines
  // come before the one on its death) or OUTPUT_END_WAIT_MS have passed. Not at 'close', which
  // waits for both pipes and the IPC channel to close: one held open would leave the slot down.
  worker.process.once('exit', (code, signal) => {
    void outputEnded(worker.process).then(() => onDeath(set, slot, worker, code, signal));
  });
}

/** Resolves once `child`'s stdout and stderr have ended, or after OUTPUT_END_WAIT_MS. */
async function outputEnded(child: ChildProcess): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, OUTPUT_END_WAIT_MS);
  });
  const ends = [child.stdout, child.stderr].map((stream) =>
    stream === null ? Promise.resolve() : finished(stream).catch(() => undefined),
  );
  await Promise.race([Promise.all(ends), waited]);
  clearTimeout(timer);
}

function onMessage(set: WorkerSetState, slot: Slot, worker: Worker, message: FromWorker): void {
  if (slot.worker !== worker) return;
  switch (message.type) {
    case 'hello':
      if (set.phase === 'stopping' || set.phase === 'failing') order(slot, { type: 'drain' });
      else {
        order(slot, { type: 'start', config: set.config });
        slot.state = 'started';
      }
      break;
    case 'listening':
      slot.state = 'listening';
      if (slot.replacement)
        set.logger.info({ worker: slot.index, worker_pid: worker.process.pid }, 'worker restarted');
      if (set.phase === 'starting' && set.slots.every((s) => s.state === 'listening'))
        void opened(set, message.port);
      break;
    case 'start-failed':
      if (set.phase === 'starting') startFailed(set, new Error(message.message));
      break;
    case 'in-flight':
      slot.inFlight = message.count;
      break;
    case 'readiness':
    case 'metrics':
      slot.pending.get(message.id)?.(message);
      break;
  }
}

function onDeath(
  set: WorkerSetState,
  slot: Slot,
  worker: Worker,
  code: number | null,
  signal: NodeJS.Signals | null,
): void {
  if (slot.worker !== worker) return;
  slot.worker = undefined;
  slot.state = 'down';
  slot.inFlight = 0;
  for (const answer of [...slot.pending.values()]) answer(undefined);
  const pid = worker.process.pid;
  if (set.phase === 'stopping' || set.phase === 'failing') {
    if (code !== 0) set.drainFailed = true;
    set.logger.info({ worker: slot.index, worker_pid: pid, code, signal }, 'worker stopped');
    if (live(set).length === 0) void allStopped(set);
    return;
  }
  if (set.phase === 'ended') return;
  if (set.phase === 'starting') {
    set.logger.error({ worker: slot.index, worker_pid: pid, code, signal }, 'worker died');
    startFailed(
      set,
      new Error(
        `worker ${slot.index} exited before listening (${signal ?? `code ${String(code)}`})`,
      ),
    );
    return;
  }
  replace(set, slot, pid, code, signal);
}

/** A worker died while the set runs: a new one in its slot, after the backoff. */
function replace(
  set: WorkerSetState,
  slot: Slot,
  pid: number | undefined,
  code: number | null,
  signal: NodeJS.Signals | null,
): void {
  const uptimeMs = Date.now() - slot.startedAt;
  const delay = slot.backoff.delayAfter(uptimeMs);
  set.logger.error(
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
  slot.restartTimer = setTimeout(() => fork(set, slot), delay);
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

import type { GatewayConfig } from '../config/config-schema.js';
import { createGateway, type Gateway } from '../gateway/gateway.js';
import { logStartFailure } from '../lifecycle/start-failure.js';
import { createLogger, type Logger } from '../observability/create-logger.js';
import type { FromWorker, ToWorker, WorkerReadiness } from '../lifecycle/messages.js';

/** How often a draining worker tells the primary how many requests it still serves. */
const IN_FLIGHT_REPORT_MS = 100;

/** One worker process, as its orders find and change it. */
interface WorkerProcess {
  readonly slot: number;
  gateway: Gateway | undefined;
  /** Made with the configuration of the `start` order. */
  logger: Logger | undefined;
  draining: boolean;
  readonly send: (message: FromWorker) => void;
  /** Resolves serveWorker's promise with the exit code, once the log lines are written. */
  readonly end: (code: number) => void;
}

/**
 * One worker of `serve --workers`: a whole gateway without an admin port, on the API port the
 * primary shares. It acts on the primary's messages only. SIGINT, SIGTERM and SIGHUP are
 * ignored: a terminal's Ctrl-C or a supervisor's SIGTERM to the process group reaches every
 * process, and the primary turns it into one coordinated drain or reload. Resolves with the
 * exit code once drained (0) or when the start failed (1). If the primary goes away, Node's
 * cluster ends the worker at once.
 */
export function serveWorker(slot: number): Promise<number> {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {});
  let exit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (exit = resolve));
  const worker: WorkerProcess = {
    slot,
    gateway: undefined,
    logger: undefined,
    draining: false,
    send: (message) => {
      if (process.connected) process.send?.(message);
    },
    end: (code) => {
      if (worker.logger === undefined) exit(code);
      else worker.logger.flush(() => exit(code));
    },
  };
  // Orders that change state run one after another, in the order they came.
  let queue: Promise<void> = Promise.resolve();
  process.on('message', (raw: unknown) => {
    const message = raw as ToWorker;
    switch (message.type) {
      case 'start':
        queue = queue.then(() => start(worker, message.config));
        break;
      case 'reload':
        queue = queue.then(() => reload(worker, message.config));
        break;
      case 'drain':
        queue = queue.then(() => drain(worker));
        break;
      case 'readiness?':
        void readiness(worker).then((state) =>
          worker.send({ type: 'readiness', id: message.id, state }),
        );
        break;
      case 'metrics?':
        answerMetrics(worker, message.id);
        break;
    }
  });
  worker.send({ type: 'hello' });
  return exited;
}

async function start(worker: WorkerProcess, config: GatewayConfig): Promise<void> {
  if (worker.draining) return;
  const logger = createLogger(config.logging.level).child({
    worker: worker.slot,
    worker_pid: process.pid,
  });
  worker.logger = logger;
  try {
    worker.gateway = await createGateway(config, { logger, worker: true });
    const { port } = await worker.gateway.listen();
    worker.send({ type: 'listening', port });
  } catch (error) {
    logStartFailure(logger, error);
    worker.send({
      type: 'start-failed',
      message: error instanceof Error ? error.message : String(error),
    });
    worker.gateway = undefined;
    worker.draining = true;
    worker.end(1);
  }
}

async function reload(worker: WorkerProcess, config: GatewayConfig): Promise<void> {
  const { gateway, logger } = worker;
  if (gateway === undefined || logger === undefined || worker.draining) return;
  logger.level = config.logging.level;
  try {
    await gateway.reload(config);
  } catch (error) {
    // The primary validated this configuration and the other workers run it: rather than
    // serve an older one, drain and let the primary start a replacement with it.
    logger.error({ err: error }, 'configuration not applied; restarting this worker');
    await drain(worker, 1);
  }
}

async function drain(worker: WorkerProcess, code = 0): Promise<void> {
  if (worker.draining) return;
  worker.draining = true;
  const { gateway: running, logger } = worker;
  if (running === undefined) {
    worker.end(code);
    return;
  }
  const report = (): void => worker.send({ type: 'in-flight', count: running.inFlight() });
  report();
  logger?.info({ in_flight: running.inFlight() }, 'draining');
  logger?.flush();
  const reporting = setInterval(report, IN_FLIGHT_REPORT_MS);
  try {
    await running.close();
    logger?.info('stopped');
    worker.end(code);
  } catch (error) {
    logger?.error({ err: error }, 'shutdown failed');
    worker.end(1);
  } finally {
    clearInterval(reporting);
  }
}

async function readiness(worker: WorkerProcess): Promise<WorkerReadiness> {
  const running = worker.gateway;
  if (worker.draining) return 'draining';
  if (running === undefined) return 'starting';
  const ready = await running.store.ping().then(
    () => true,
    () => false,
  );
  if (worker.draining) return 'draining';
  return ready ? 'ready' : 'store_unavailable';
}

function answerMetrics(worker: WorkerProcess, id: number): void {
  const metrics = worker.gateway?.metrics.snapshot() ?? Promise.resolve([]);
  void metrics.then(
    (snapshot) => worker.send({ type: 'metrics', id, metrics: snapshot }),
    () => worker.send({ type: 'metrics', id, metrics: [] }),
  );
}

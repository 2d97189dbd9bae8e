import { createGateway, type Gateway } from '../gateway/gateway.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { logStartFailure } from '../lifecycle/start-failure.js';
import { createLogger, type Logger } from '../observability/create-logger.js';
import type { FromWorker, ToWorker, WorkerReadiness } from './messages.js';

/** How often a draining worker tells the primary how many requests it still serves. */
const IN_FLIGHT_REPORT_MS = 100;

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
  const send = (message: FromWorker): void => {
    if (process.connected) process.send?.(message);
  };
  let gateway: Gateway | undefined;
  let logger: Logger | undefined;
  let draining = false;
  // Orders that change state run one after another, in the order they came.
  let queue: Promise<void> = Promise.resolve();
  let exit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (exit = resolve));
  const end = (code: number): void => {
    if (logger === undefined) exit(code);
    else logger.flush(() => exit(code));
  };

  const start = async (config: GatewayConfig): Promise<void> => {
    if (draining) return;
    logger = createLogger(config.logging.level).child({ worker: slot, worker_pid: process.pid });
    try {
      gateway = await createGateway(config, { logger, worker: true });
      const { port } = await gateway.listen();
      send({ type: 'listening', port });
    } catch (error) {
      logStartFailure(logger, error);
      send({
        type: 'start-failed',
        message: error instanceof Error ? error.message : String(error),
      });
      gateway = undefined;
      draining = true;
      end(1);
    }
  };

  const reload = async (config: GatewayConfig): Promise<void> => {
    if (gateway === undefined || logger === undefined || draining) return;
    logger.level = config.logging.level;
    try {
      await gateway.reload(config);
    } catch (error) {
      // The primary validated this configuration and the other workers run it: rather than
      // serve an older one, drain and let the primary start a replacement with it.
      logger.error({ err: error }, 'configuration not applied; restarting this worker');
      await drain(1);
    }
  };

  const drain = async (code = 0): Promise<void> => {
    if (draining) return;
    draining = true;
    const running = gateway;
    if (running === undefined) {
      end(code);
      return;
    }
    const report = (): void => send({ type: 'in-flight', count: running.inFlight() });
    report();
    logger?.info({ in_flight: running.inFlight() }, 'draining');
    logger?.flush();
    const reporting = setInterval(report, IN_FLIGHT_REPORT_MS);
    try {
      await running.close();
      logger?.info('stopped');
      end(code);
    } catch (error) {
      logger?.error({ err: error }, 'shutdown failed');
      end(1);
    } finally {
      clearInterval(reporting);
    }
  };

  const readiness = async (): Promise<WorkerReadiness> => {
    const running = gateway;
    if (draining) return 'draining';
    if (running === undefined) return 'starting';
    const ready = await running.store.ping().then(
      () => true,
      () => false,
    );
    if (draining) return 'draining';
    return ready ? 'ready' : 'store_unavailable';
  };

  process.on('message', (raw: unknown) => {
    const message = raw as ToWorker;
    switch (message.type) {
      case 'start':
        queue = queue.then(() => start(message.config));
        break;
      case 'reload':
        queue = queue.then(() => reload(message.config));
        break;
      case 'drain':
        queue = queue.then(() => drain());
        break;
      case 'readiness?':
        void readiness().then((state) => send({ type: 'readiness', id: message.id, state }));
        break;
      case 'metrics?': {
        const metrics = gateway?.metrics.snapshot() ?? Promise.resolve([]);
        void metrics.then(
          (snapshot) => send({ type: 'metrics', id: message.id, metrics: snapshot }),
          () => send({ type: 'metrics', id: message.id, metrics: [] }),
        );
        break;
      }
    }
  });
  send({ type: 'hello' });
  return exited;
}

import { constants } from 'node:os';
import { createGateway } from '../app.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/load-config.js';
import { ListenError } from '../http/listen.js';
import { createLogger } from '../observability/create-logger.js';

/** The exit code of a process stopped by `signal`, as a shell reports it: 128 + its number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/**
 * Runs until SIGTERM/SIGINT, then drains; a second SIGTERM/SIGINT during the drain exits at
 * once (128 + the signal's number: 130 for SIGINT), logging how many requests it cuts. SIGHUP
 * reloads the configuration (a file that does not validate is reported and the running
 * configuration stays). Resolves with the process exit code once every log line is written;
 * rejects, with everything already freed, when a port cannot be opened.
 */
export async function serve(
  config: GatewayConfig,
  reloadConfig: () => GatewayConfig,
  output: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const logger = createLogger(config.logging.level);
  const gateway = await createGateway(config, { logger });

  let reloading = Promise.resolve();
  process.on('SIGHUP', () => {
    reloading = reloading.then(async () => {
      try {
        const next = reloadConfig();
        logger.level = next.logging.level;
        await gateway.reload(next);
      } catch (error) {
        const problems = error instanceof ConfigError ? error.problems : [String(error)];
        logger.error({ problems }, 'configuration not reloaded; the running one stays');
      }
    });
  });

  let settle: (code: number) => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const ended = new Promise<number>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  let ending = false;
  const end = (code: number): void => {
    ending = true;
    // Written before the caller exits: log lines are batched otherwise.
    logger.flush(() => settle(code));
  };

  // Handlers first: a signal that arrives while the ports open must drain, not kill.
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (ending) return;
    if (stopping) {
      // The operator will not wait for the drain: leave now, saying what that cuts.
      logger.warn({ signal, requests_cut: gateway.inFlight() }, 'second signal: exiting now');
      end(signalExitCode(signal));
      return;
    }
    stopping = true;
    logger.info({ signal }, 'draining');
    gateway.close().then(
      () => {
        logger.info('stopped');
        end(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        end(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  gateway.listen().then(
    ({ port }) => {
      if (gateway.bootstrap === undefined || stopping) return;
      const { key, secret, subject } = gateway.bootstrap;
      // A wildcard address is not one a client can connect to: show loopback instead.
      const reachable =
        { '0.0.0.0': '127.0.0.1', '::': '::1' }[config.server.host] ?? config.server.host;
      const host = reachable.includes(':') ? `[${reachable}]` : reachable;
      // Printed to stderr, outside the JSON log stream: a secret must never reach a log line.
      output.write(
        `\naccounts-gateway: a key pair for subject "${subject}" (memory store; shown once, gone on restart)\n` +
          `  key:    ${key}\n  secret: ${secret}\n` +
          `  try:    curl -u '${key}:${secret}' ${config.server.tls === undefined ? 'http' : 'https'}://${host}:${port}/accounts\n\n`,
      );
    },
    (error: unknown) => {
      // listen() has freed everything it opened; the caller prints the reason and exits 1.
      if (error instanceof ListenError) {
        logger.error(
          { address: error.address, listener: error.listener, code: error.code },
          'cannot listen',
        );
      } else logger.error({ err: error }, 'start failed');
      ending = true;
      logger.flush(() => fail(error));
    },
  );
  return ended;
}

import { createGateway } from '../app.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/load-config.js';
import { createLogger } from '../observability/create-logger.js';

/**
 * Runs until SIGTERM/SIGINT, then drains; SIGHUP reloads the configuration (a file that
 * does not validate is reported and the running configuration stays). Resolves with the
 * process exit code.
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

  // Handlers first: a signal that arrives while the ports open must drain, not kill.
  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'draining');
      gateway.close().then(
        () => {
          logger.info('stopped');
          logger.flush(() => resolve(0));
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          logger.flush(() => resolve(1));
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });

  const { port } = await gateway.listen();
  if (gateway.bootstrap !== undefined && !stopping) {
    const { key, secret, subject } = gateway.bootstrap;
    // A wildcard address is not one a client can connect to: show loopback instead.
    const reachable =
      { '0.0.0.0': '127.0.0.1', '::': '::1' }[config.server.host] ?? config.server.host;
    const host = reachable.includes(':') ? `[${reachable}]` : reachable;
    // Printed to stderr, outside the JSON log stream: a secret must never reach a log line.
    output.write(
      `\naccounts-gateway: a key pair for subject "${subject}" (memory store; shown once, gone on restart)\n` +
        `  key:    ${key}\n  secret: ${secret}\n` +
        `  try:    curl -u '${key}:${secret}' http://${host}:${port}/accounts\n\n`,
    );
  }
  return stopped;
}

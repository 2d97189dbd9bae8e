import { createGateway, type Gateway } from '../app.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { supervise, type SupervisedTarget } from '../lifecycle/supervisor.js';
import { createLogger } from '../observability/create-logger.js';

/**
 * `serve` in one process: one gateway under the supervisor (lifecycle/supervisor.ts), which
 * turns signals into a drain, a second one into an exit and SIGHUP into a reload. Resolves
 * with the process exit code once every log line is written; rejects, with everything
 * already freed, when the gateway cannot start (a port that would not open).
 */
export function serve(
  config: GatewayConfig,
  reloadConfig: () => Promise<GatewayConfig>,
  output: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const logger = createLogger(config.logging.level);
  return supervise({
    config,
    reloadConfig,
    logger,
    target: (resolved) => {
      let gateway: Gateway | undefined;
      // Made by start(); a drain or a reload ordered meanwhile waits for it.
      let creating: Promise<Gateway> | undefined;
      let draining = false;
      const created = (): Promise<Gateway> =>
        creating ?? Promise.reject(new Error('the gateway was not started'));
      const target: SupervisedTarget = {
        async start() {
          creating = createGateway(resolved, { logger });
          gateway = await creating;
          if (draining) return;
          const { port } = await gateway.listen();
          if (gateway.bootstrap !== undefined && !draining)
            output.write(bootstrapNotice(gateway.bootstrap, resolved.server.host, port));
        },
        async drain() {
          draining = true;
          await (await created()).close();
          return 0;
        },
        async reload(next) {
          await (await created()).reload(next);
        },
        inFlight: () => gateway?.inFlight() ?? 0,
        abandon: () => undefined,
        drainingFields: () => ({}),
        notReloadedMessage: 'configuration not reloaded; the running one stays',
      };
      return target;
    },
  });
}

/**
 * The demo key pair, printed to stderr outside the JSON log stream: a secret must never
 * reach a log line.
 */
function bootstrapNotice(
  { key, secret, subject }: NonNullable<Gateway['bootstrap']>,
  configuredHost: string,
  port: number,
): string {
  // A wildcard address is not one a client can connect to: show loopback instead.
  const reachable = { '0.0.0.0': '127.0.0.1', '::': '::1' }[configuredHost] ?? configuredHost;
  const host = reachable.includes(':') ? `[${reachable}]` : reachable;
  return (
    `\naccounts-gateway: a key pair for subject "${subject}" (memory store; shown once, gone on restart)\n` +
    `  key:    ${key}\n  secret: ${secret}\n` +
    `  try:    curl -u '${key}:${secret}' http://${host}:${port}/accounts\n\n`
  );
}

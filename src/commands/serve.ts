import { resolve } from 'node:path';
import { createGateway, type Gateway } from '../app.js';
import type { GatewayConfig } from '../config/config-schema.js';
import type { Logger } from '../observability/create-logger.js';
import type { ReloadOutcome } from '../observability/metrics.js';

/**
 * `serve` in one process: one gateway, as the supervisor (lifecycle/supervisor.ts, which the
 * CLI hands it to) drives it. A drain or a reload ordered while it starts waits for it.
 */
export function oneGateway(
  config: GatewayConfig,
  logger: Logger,
  output: NodeJS.WritableStream = process.stderr,
) {
  let gateway: Gateway | undefined;
  let creating: Promise<Gateway> | undefined;
  let draining = false;
  const created = (): Promise<Gateway> =>
    creating ?? Promise.reject(new Error('the gateway was not started'));
  return {
    async start(): Promise<void> {
      creating = createGateway(config, { logger });
      gateway = await creating;
      if (draining) return;
      const { port } = await gateway.listen();
      if (gateway.bootstrap !== undefined && !draining)
        output.write(bootstrapNotice(gateway.bootstrap, config.server, port));
    },
    async drain(): Promise<number> {
      draining = true;
      await (await created()).close();
      return 0;
    },
    async reload(next: GatewayConfig): Promise<void> {
      await (await created()).reload(next);
    },
    inFlight: (): number => gateway?.inFlight() ?? 0,
    abandon: (): void => undefined,
    drainingFields: () => ({}),
    notReloadedMessage: 'configuration not reloaded; the running one stays',
    countReload: (outcome: ReloadOutcome): void => gateway?.metrics.reloads?.count(outcome),
  };
}

/**
 * The demo key pair, printed to stderr outside the JSON log stream: a secret must never
 * reach a log line.
 */
function bootstrapNotice(
  { key, secret, subject }: NonNullable<Gateway['bootstrap']>,
  server: Pick<GatewayConfig['server'], 'host' | 'tls'>,
  port: number,
): string {
  const configuredHost = server.host;
  // A wildcard address is not one a client can connect to: show loopback instead.
  const reachable = { '0.0.0.0': '127.0.0.1', '::': '::1' }[configuredHost] ?? configuredHost;
  const host = reachable.includes(':') ? `[${reachable}]` : reachable;
  // curl (7.68+, OpenSSL) takes any certificate in --cacert as a trust anchor, the server's
  // own included, so the line works with a private CA whose file the gateway never sees.
  // Absolute: curl runs from another directory than the gateway, maybe.
  const trust = server.tls === undefined ? '' : `--cacert '${resolve(server.tls.certFile)}' `;
  const scheme = server.tls === undefined ? 'http' : 'https';
  return (
    `\naccounts-gateway: a key pair for subject "${subject}" (memory store; shown once, gone on restart)\n` +
    `  key:    ${key}\n  secret: ${secret}\n` +
    `  try:    curl ${trust}-u '${key}:${secret}' ${scheme}://${host}:${port}/accounts\n\n`
  );
}

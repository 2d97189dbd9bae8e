import { resolve } from 'node:path';
import type { GatewayConfig } from '../config/config-schema.js';
import type { ConfigReloads, ReloadOutcome } from '../observability/metrics.js';
import type { SupervisedTarget } from './supervisor.js';

/** The demo key pair a gateway made at start (memory store only), and its web-app user. */
export interface DemoPair {
  readonly key: string;
  readonly secret: string;
  readonly subject: string;
  readonly user?: { readonly username: string; readonly password: string } | undefined;
}

/** What serves in one process, as gateway/ makes it (its Gateway is one). */
export interface ServedGateway {
  listen(): Promise<{ port: number }>;
  reload(next: GatewayConfig): Promise<void>;
  close(): Promise<void>;
  inFlight(): number;
  readonly bootstrap: DemoPair | undefined;
  readonly metrics: { readonly reloads: ConfigReloads | undefined };
}

/**
 * `serve` in one process: one gateway, made by `create`, as the supervisor drives it. A drain
 * or a reload ordered while it starts waits for it. The demo pair, if any, goes to `output`.
 */
export function serveOneProcess(
  config: GatewayConfig,
  create: () => Promise<ServedGateway>,
  output: NodeJS.WritableStream,
): SupervisedTarget {
  let gateway: ServedGateway | undefined;
  let creating: Promise<ServedGateway> | undefined;
  let draining = false;
  const created = (): Promise<ServedGateway> =>
    creating ?? Promise.reject(new Error('the gateway was not started'));
  return {
    async start(): Promise<void> {
      creating = create();
      gateway = await creating;
      if (draining) return;
      const { port } = await gateway.listen();
      if (gateway.bootstrap !== undefined && !draining)
        output.write(bootstrapNotice(gateway.bootstrap, config, port));
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
  { key, secret, subject, user }: DemoPair,
  config: Pick<GatewayConfig, 'server' | 'portal'>,
  port: number,
): string {
  const { server, portal } = config;
  const configuredHost = server.host;
  // A wildcard address is not one a client can connect to: show loopback instead.
  const reachable = { '0.0.0.0': '127.0.0.1', '::': '::1' }[configuredHost] ?? configuredHost;
  const host = reachable.includes(':') ? `[${reachable}]` : reachable;
  // curl (7.68+, OpenSSL) takes any certificate in --cacert as a trust anchor, the server's
  // own included, so the line works with a private CA whose file the gateway never sees.
  // Absolute: curl runs from another directory than the gateway, maybe.
  const trust = server.tls === undefined ? '' : `--cacert '${resolve(server.tls.certFile)}' `;
  const scheme = server.tls === undefined ? 'http' : 'https';
  const origin = `${scheme}://${host}:${port}`;
  const signIn =
    user === undefined || !portal.enabled
      ? ''
      : `accounts-gateway: the portal, to manage the pairs of "${subject}" in a browser (shown once)\n` +
        `  open:     ${origin}${portal.basePath}\n` +
        `  username: ${user.username}\n  password: ${user.password}\n\n`;
  return (
    `\naccounts-gateway: a key pair for subject "${subject}" (memory store; shown once, gone on restart)\n` +
    `  key:    ${key}\n  secret: ${secret}\n` +
    `  try:    curl ${trust}-u '${key}:${secret}' ${origin}/accounts\n\n` +
    signIn
  );
}

import type { GatewayConfig } from '../config/config-schema.js';

/** Settings bound to sockets or connections made at start. */
const RESTART_ONLY = [
  'server.host',
  'server.port',
  'server.workers',
  'server.threadPoolNice',
  'admin',
  'credentials',
  // The store is made at start, with its retention.
  'keys.retainEndedDays',
  // So is its audit log, with its bounds.
  'audit',
  // The count's timer runs from the start.
  'keys.expiringCountIntervalSec',
  // One span exporter per process, made at start (sampling and propagation do reload).
  'tracing.otlp',
  'tracing.serviceName',
] as const;

/**
 * What a reload applies: `next`, but for the settings bound to what was made at start, which
 * keep `running`'s values; `kept` names those `next` changes (they need a restart).
 * `servesHttps`: the API port was made with TLS.
 */
export function reloadedConfig(
  running: GatewayConfig,
  next: GatewayConfig,
  servesHttps: boolean,
): { effective: GatewayConfig; kept: string[] } {
  const kept: string[] = RESTART_ONLY.filter(
    (path) => JSON.stringify(pick(running, path)) !== JSON.stringify(pick(next, path)),
  );
  // HTTPS turned on or off needs a new server; new files for it are read by the reload.
  const tls = next.server.tls !== undefined && servesHttps ? next.server.tls : running.server.tls;
  if (tls !== next.server.tls) kept.push('server.tls');
  const effective: GatewayConfig = {
    ...next,
    server: { ...next.server, host: running.server.host, port: running.server.port, tls },
    admin: running.admin,
    credentials: running.credentials,
  };
  return { effective, kept };
}

function pick(config: GatewayConfig, path: string): unknown {
  let value: unknown = config;
  for (const part of path.split('.')) value = (value as Record<string, unknown>)[part];
  return value;
}

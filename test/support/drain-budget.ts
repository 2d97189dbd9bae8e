import type { GatewayConfig } from '../../src/config/config-schema.js';

/**
 * Seconds a supervisor (the kubelet, systemd) must leave a gateway past its drain timeout
 * before it kills it: the drain ends with the last connection, then the process closes its
 * Redis connections and writes its last log lines.
 */
export const EXIT_MARGIN_SEC = 5;

/** The drain timeout in whole seconds, as a supervisor's timeout is written. */
export function drainSec(config: GatewayConfig): number {
  return Math.ceil(config.server.drainTimeoutMs / 1000);
}

/**
 * What a drain with these settings would lose, one sentence each (none: nothing): the
 * drain timeout cuts whatever is still open, so it must leave a connection accepted at the
 * last moment its keep-alive timeout to be answered and closed (docs/operations.md, Signals),
 * and a request on its way at the signal its upstream's timeout to be answered.
 */
export function drainProblems(config: GatewayConfig): string[] {
  const { drainTimeoutMs, shutdownDelayMs, keepAliveTimeoutMs } = config.server;
  const problems: string[] = [];
  if (drainTimeoutMs < shutdownDelayMs + keepAliveTimeoutMs)
    problems.push(
      `drainTimeoutMs ${drainTimeoutMs} < shutdownDelayMs ${shutdownDelayMs} + keepAliveTimeoutMs ${keepAliveTimeoutMs}`,
    );
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    if (drainTimeoutMs < upstream.timeoutMs + keepAliveTimeoutMs)
      problems.push(
        `drainTimeoutMs ${drainTimeoutMs} < upstreams.${name}.timeoutMs ${upstream.timeoutMs} + keepAliveTimeoutMs ${keepAliveTimeoutMs}`,
      );
  }
  return problems;
}

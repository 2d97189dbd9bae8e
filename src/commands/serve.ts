import type { GatewayConfig } from '../config/config-schema.js';
import { createGateway } from '../gateway/gateway.js';
import { serveOneProcess } from '../lifecycle/serve-one-process.js';
import type { SupervisedTarget } from '../lifecycle/supervisor.js';
import type { Logger } from '../observability/create-logger.js';

/**
 * `serve` in one process: one gateway, as the supervisor (lifecycle/supervisor.ts, which the
 * CLI hands it to) drives it (lifecycle/serve-one-process.ts).
 */
export function oneGateway(
  config: GatewayConfig,
  logger: Logger,
  output: NodeJS.WritableStream = process.stderr,
): SupervisedTarget {
  return serveOneProcess(config, () => createGateway(config, { logger }), output);
}

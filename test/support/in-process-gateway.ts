import { createGateway, type Gateway } from '../../src/gateway/gateway.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { Backend } from '../../src/backends/backend.js';
import { createLogger, type Logger } from '../../src/observability/create-logger.js';
import { gatewayYaml, type GatewayConfigInput } from './gateway-yaml.js';
import { TEST_BCRYPT_COST } from './seed-redis.js';

export interface GatewayOptions {
  redisUrl: string;
  keyPrefix: string;
  upstreamUrl: string;
  /** Seconds a verified pair stays cached. */
  cacheTtlSec?: number;
  /** Also the cost of the gateway's dummy hash for unknown keys. */
  bcryptCost?: number;
  /** Further settings (e.g. `rateLimits`), laid over the ones above. */
  config?: GatewayConfigInput;
  /** The gateway's clock (milliseconds since the epoch); by default Date.now. */
  now?: () => number;
  /** A backend of the test's own (e.g. the memory backend) instead of Redis at `redisUrl`. */
  backend?: Backend;
  /** Where the gateway logs (a test's captured logger); silent by default. */
  logger?: Logger;
}

export interface RunningGateway {
  readonly gateway: Gateway;
  readonly url: string;
  readonly adminUrl: string;
  close(): Promise<void>;
}

/** A gateway in this process, configured from YAML like the CLI does, on port 0. */
export async function startInProcessGateway(options: GatewayOptions): Promise<RunningGateway> {
  const yaml = gatewayYaml({
    upstreamUrl: options.upstreamUrl,
    redis: { url: options.redisUrl, keyPrefix: options.keyPrefix },
    config: {
      // The pool reniced would be the test runner's own (fs and bcrypt of the test too), and a
      // timing test's compares would starve behind any busy process on a shared machine:
      // thread-priority.test.ts tests the priority on a gateway process of its own.
      server: { host: '127.0.0.1', port: 0, threadPoolNice: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      credentials: { bcryptCost: options.bcryptCost ?? TEST_BCRYPT_COST },
      auth: { basic: { cache: { ttlSec: options.cacheTtlSec ?? 60 } } },
      logging: { level: 'silent' },
      ...options.config,
    },
  });
  const config = parseConfig(yaml, 'integration-test.yaml');
  const gateway = await createGateway(config, {
    logger: options.logger ?? createLogger('silent'),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.backend === undefined ? {} : { backend: options.backend }),
  });
  const { port, adminPort } = await gateway.listen();
  if (adminPort === undefined) throw new Error('the admin server is enabled in this config');
  return {
    gateway,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    close: () => gateway.close(),
  };
}

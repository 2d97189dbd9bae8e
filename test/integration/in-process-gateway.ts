import { expect } from 'vitest';
import { Redis } from 'ioredis';
import { createGateway, type Gateway } from '../../src/app.js';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { parseConfig } from '../../src/config/load-config.js';
import { redisKeys } from '../../src/credentials/redis-store.js';
import { createLogger } from '../../src/observability/create-logger.js';

/** The RedisConfig a gateway would get from YAML, built by hand for stores made in tests. */
export function redisConfig(url: string, keyPrefix: string): RedisConfig {
  return {
    url,
    mode: 'standalone',
    sentinelName: undefined,
    nodes: [],
    keyPrefix,
    commandTimeoutMs: 300,
  };
}

export interface GatewayOptions {
  redisUrl: string;
  keyPrefix: string;
  upstreamUrl: string;
  /** Seconds a verified pair stays cached. */
  cacheTtlSec?: number;
  /** Also the cost of the gateway's dummy hash for unknown keys. */
  bcryptCost?: number;
}

export interface RunningGateway {
  readonly gateway: Gateway;
  readonly url: string;
  readonly adminUrl: string;
  close(): Promise<void>;
}

/** A gateway in this process, configured from YAML like the CLI does, on port 0. */
export async function startInProcessGateway(options: GatewayOptions): Promise<RunningGateway> {
  const yaml = `
server: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0 }
upstreams:
  accounts: { url: "${options.upstreamUrl}" }
credentials:
  store: redis
  bcryptCost: ${options.bcryptCost ?? 4}
  redis: { url: "${options.redisUrl}", keyPrefix: "${options.keyPrefix}" }
auth:
  basic:
    cache: { ttlSec: ${options.cacheTtlSec ?? 60} }
logging: { level: silent }
`;
  const config = parseConfig(yaml, 'integration-test.yaml');
  const gateway = await createGateway(config, { logger: createLogger('silent') });
  const { port, adminPort } = await gateway.listen();
  if (adminPort === undefined) throw new Error('the admin server is enabled in this config');
  return {
    gateway,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    close: () => gateway.close(),
  };
}

/**
 * Resolves once `count` connections subscribe to the prefix's revocation channel, so a test
 * never publishes into a channel nobody listens to yet. Each attempt is one Redis round trip.
 */
export async function untilSubscribers(
  redisUrl: string,
  keyPrefix: string,
  count: number,
  deadlineMs = 5_000,
): Promise<void> {
  const channel = redisKeys(keyPrefix).channel;
  const redis = new Redis(redisUrl);
  try {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const reply = (await redis.pubsub('NUMSUB', channel)) as [string, number];
      if (Number(reply[1]) >= count) return;
      if (Date.now() > deadline) {
        throw new Error(`${channel} has ${String(reply[1])} subscribers, wanted ${count}`);
      }
    }
  } finally {
    redis.disconnect();
  }
}

export interface PollResult {
  readonly status: number;
  readonly elapsedMs: number;
  readonly body: unknown;
}

/**
 * Repeats an awaited request until it answers `status` or the deadline passes; between
 * attempts it waits `intervalMs` (polling for a state change, not a fixed sleep).
 */
export async function pollStatus(
  request: () => Promise<Response>,
  status: number,
  { deadlineMs = 10_000, intervalMs = 0 }: { deadlineMs?: number; intervalMs?: number } = {},
): Promise<PollResult> {
  const started = performance.now();
  let last: PollResult | undefined;
  while (performance.now() - started < deadlineMs) {
    const res = await request();
    const text = await res.text();
    last = { status: res.status, elapsedMs: performance.now() - started, body: parseBody(text) };
    if (res.status === status) return last;
    if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `no ${status} within ${deadlineMs} ms; last answer: ${JSON.stringify(last ?? null)}`,
  );
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? NaN)
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

/** The envelope the echo upstream answers with by default. */
export const ECHO_BODY = {
  result: 'success',
  status: 200,
  meta: { count: 0, limit: 1000, order: 'desc', last_id: null },
  data: [],
} as const;

export function errorBody(code: string, status: number, message: string) {
  return {
    result: 'error',
    status,
    error: { code, message },
    request_id: expect.any(String) as unknown,
  };
}

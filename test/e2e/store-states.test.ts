import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { fromFetch } from '../support/http-answer.js';
import {
  freePort,
  localRedisOn,
  spawnRedisServer,
  startLocalRedis,
  type TestRedis,
} from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { scrapeMetric } from '../support/scrape-metric.js';

// gateway_ready at every scrape, and Redis's connection states in the log: each change once,
// with the address and why, never a password; a 503's warning names Redis.

/** What a test started, stopped after it whatever happened. */
const running: { gateways: GatewayProcess[]; redis: TestRedis[]; servers: ChildProcess[] } = {
  gateways: [],
  redis: [],
  servers: [],
};
let upstream: EchoUpstream | undefined;

afterEach(async () => {
  await Promise.all(running.gateways.splice(0).map((gateway) => gateway.stop('SIGKILL')));
  await Promise.all(running.redis.splice(0).map((redis) => redis.stop()));
  for (const server of running.servers.splice(0)) server.kill('SIGKILL');
  await upstream?.close();
  upstream = undefined;
});

async function gatewayOn(redisUrl: string, extraArgs: string[] = []): Promise<GatewayProcess> {
  upstream ??= await startEchoUpstream();
  const gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: uniquePrefix('states') },
    }),
    extraArgs,
  );
  running.gateways.push(gateway);
  return gateway;
}

/** A Basic request the cache cannot answer: it needs the store. */
function uncachedRequest(gateway: GatewayProcess): Promise<Response> {
  return fetch(`${gateway.url}/accounts`, {
    headers: { authorization: basicHeader('ak_states', 'states-secret-0123456789') },
  });
}

const linesOf = (gateway: GatewayProcess, msg: string): Record<string, unknown>[] =>
  gateway.logs.filter((line) => line.msg === msg);

describe('gateway_ready', () => {
  it('reads 1 at the first scrape of a fresh gateway on the memory store, with no /readyz', async () => {
    const gateway = await startGateway(gatewayYaml({ upstreamUrl: 'builtin' }));
    running.gateways.push(gateway);
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(1);
  });

  it('reads 1 at the first scrape of serve --workers 2 on Redis, with no /readyz', async () => {
    const gateway = await gatewayOn(inject('redisUrl'), ['--workers', '2']);
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(1);
  });
});

describe('Redis states', () => {
  it('logs a Redis down at start once, names it in the 503’s warning, and reads ready once it is up', async () => {
    const port = await freePort();
    const redis = localRedisOn(port);
    running.redis.push(redis);
    // A password in the URL must not reach any line.
    const gateway = await gatewayOn(`redis://:url-password-4711@127.0.0.1:${port}`);
    const address = `redis://127.0.0.1:${port}`;
    expect(linesOf(gateway, 'redis unreachable')).toEqual([
      expect.objectContaining({
        level: 40,
        store: 'redis',
        address,
        reason: 'refused',
        cause: `connect ECONNREFUSED 127.0.0.1:${port}`,
      }),
    ]);
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(0);

    const res = await fromFetch(await uncachedRequest(gateway));
    expectGatewayError(res, 'credential_store_unavailable', {
      message: 'Credentials cannot be checked right now.',
    });
    expect(await gateway.waitForLog('request failed')).toMatchObject({
      status: 503,
      cause: `RedisUnavailable: Redis ${address}: unreachable, connection refused (connect ECONNREFUSED 127.0.0.1:${port})`,
    });

    await redis.start();
    expect(await gateway.waitForLog('redis connected')).toMatchObject({ level: 30, address });
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(1);
    // The client retried all along: still one line for the whole outage.
    expect(linesOf(gateway, 'redis unreachable')).toHaveLength(1);
    expect(gateway.output()).not.toContain('url-password-4711');
  });

  it('logs a lost and a regained connection once each, and gateway_ready follows them', async () => {
    const redis = await startLocalRedis();
    running.redis.push(redis);
    const gateway = await gatewayOn(redis.url);
    // Connected before it said it listens: the first scrape is already true.
    expect(linesOf(gateway, 'redis connected')).toHaveLength(1);
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(1);

    await redis.stop();
    expect(await gateway.waitForLog('redis connection lost')).toMatchObject({
      level: 40,
      address: redis.url,
      // A killed server's socket ends with a FIN, or a reset when data was left unread.
      reason: expect.stringMatching(/^(closed|reset)$/) as unknown,
    });
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(0);
    expect((await uncachedRequest(gateway)).status).toBe(503);
    expect(await gateway.waitForLog('request failed')).toMatchObject({
      cause: expect.stringMatching(
        new RegExp(`^RedisUnavailable: Redis ${redis.url}: unreachable, connection `),
      ) as unknown,
    });

    await redis.start();
    expect(await gateway.waitForLog('redis connection regained')).toMatchObject({
      level: 30,
      address: redis.url,
      down_ms: expect.any(Number) as unknown,
    });
    expect(await scrapeMetric(gateway, 'gateway_ready')).toBe(1);
    expect(linesOf(gateway, 'redis connection lost')).toHaveLength(1);
    expect(linesOf(gateway, 'redis connection regained')).toHaveLength(1);
  });

  it('logs a refused password once as auth, however often the client retries, and never the password', async () => {
    const port = await freePort();
    await spawnRedisServer(
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--requirepass', 'right-pw'],
      (proc) => running.servers.push(proc),
    );
    const gateway = await gatewayOn(`redis://:wrong-password-4711@127.0.0.1:${port}`);
    expect(linesOf(gateway, 'redis unreachable')).toEqual([
      expect.objectContaining({ address: `redis://127.0.0.1:${port}`, reason: 'auth' }),
    ]);
    expect((await uncachedRequest(gateway)).status).toBe(503);
    expect(await gateway.waitForLog('request failed')).toMatchObject({
      cause: expect.stringContaining('unreachable, authentication failed (WRONGPASS') as unknown,
    });

    // Wait until Redis has refused the gateway's retries a few times (bounded polling).
    const admin = new Redis(`redis://:right-pw@127.0.0.1:${port}`);
    try {
      const deadline = Date.now() + 10_000;
      while ((await connectionsReceived(admin)) < 6) {
        if (Date.now() > deadline) throw new Error('the gateway did not retry');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      admin.disconnect();
    }
    expect(linesOf(gateway, 'redis unreachable')).toHaveLength(1);
    expect(gateway.output()).not.toContain('wrong-password-4711');
  });
});

async function connectionsReceived(redis: Redis): Promise<number> {
  const stats = await redis.info('stats');
  return Number(/total_connections_received:(\d+)/.exec(stats)?.[1] ?? 0);
}

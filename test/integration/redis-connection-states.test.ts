import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createRedisClient, type RedisClient } from '../../src/backends/redis/client.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { redisClusterConfig, redisConfig } from '../support/redis-config.js';
import { startRedisSentinels, type RedisSentinels } from '../support/redis-sentinels.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { untilState } from '../support/until-state.js';

// gateway_redis_connection_up{node,role} (issue 16 point 2) on real topologies: a lone server,
// a Sentinel set and a Cluster of 3 masters and 3 replicas, each failed over by killing a
// process by its PID. The gauge is read the way /metrics reads it, from a scrape.

interface Opened {
  readonly client: RedisClient;
  readonly backend: Backend;
  readonly metrics: GatewayMetrics;
}

const opened: Opened[] = [];

/** A Redis backend on `config` with a client of the test's own, and metrics reading from it. */
function open(config: RedisConfig): Opened {
  const client = createRedisClient(config);
  const backend = createRedisBackend(config, { client });
  const metrics = createMetrics();
  metrics.readFrom({
    openConnections: () => 0,
    cacheEntries: () => 0,
    ...(backend.redisConnections && { redisConnections: backend.redisConnections }),
  });
  const made = { client, backend, metrics };
  opened.push(made);
  return made;
}

afterAll(async () => {
  await Promise.all(opened.map(({ backend }) => backend.credentials.close()));
});

/** Each series of the gauge as `node role value`, sorted. */
async function connectionSeries(metrics: GatewayMetrics): Promise<string[]> {
  const text = await metrics.scrape();
  return text
    .split('\n')
    .flatMap((line) => {
      const match = /^gateway_redis_connection_up\{node="([^"]+)",role="([^"]+)"\} (\d+)$/.exec(
        line,
      );
      return match === null ? [] : [`${match[1]} ${match[2]} ${match[3]}`];
    })
    .sort();
}

/** Scrapes (after `step`, a command that drives the client along) until the series are `expected`. */
function untilSeries(
  what: string,
  metrics: GatewayMetrics,
  expected: readonly string[],
  step: () => Promise<unknown> = () => Promise.resolve(),
): Promise<true> {
  const want = [...expected].sort();
  return untilState(
    what,
    async () => {
      await step().catch(() => undefined);
      return connectionSeries(metrics);
    },
    (series) => (JSON.stringify(series) === JSON.stringify(want) ? true : undefined),
  );
}

describe('Redis connection state of a lone server', () => {
  let server: OwnRedis;
  beforeAll(async () => {
    server = await startOwnRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('reads 1 for the server as standalone while connected, and 0 once it is killed', async () => {
    const { metrics } = open(redisConfig(server.url, uniquePrefix('connstate')));
    const node = `127.0.0.1:${server.port}`;
    await untilSeries('the server up', metrics, [`${node} standalone 1`]);
    await server.kill();
    await untilSeries('the server down', metrics, [`${node} standalone 0`]);
  });
});

describe('Redis connection state of a Sentinel set', () => {
  let sentinels: RedisSentinels;
  beforeAll(async () => {
    sentinels = await startRedisSentinels();
  }, 120_000);
  afterAll(async () => {
    await sentinels?.stop();
  });

  it('reads the master the sentinels name, down once killed, then the promoted one as master', async () => {
    const { client, metrics } = open({
      ...redisConfig('redis://127.0.0.1:6379', uniquePrefix('connstate')),
      mode: 'sentinel',
      sentinelName: sentinels.name,
      nodes: [...sentinels.sentinelAddresses],
    });
    const first = await sentinels.master();
    await untilSeries('the first master up', metrics, [`${first.address} master 1`]);

    const former = await sentinels.killMaster();
    await untilSeries('the killed master down', metrics, [`${former.address} master 0`]);
    const promoted = await sentinels.awaitPromotion(former);
    await untilSeries(
      'the promoted master up, in place of the former',
      metrics,
      [`${promoted.address} master 1`],
      () => client.ping(),
    );
  }, 60_000);
});

describe('Redis connection state of a Cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  /** Every running node as `address role 1`, its role as its own ROLE says. */
  async function everyNodeUp(): Promise<string[]> {
    return Promise.all(
      cluster.nodes.map(async (node) => {
        const [role] = (await node.call('ROLE')) as [string];
        return `${node.address} ${role === 'master' ? 'master' : 'replica'} 1`;
      }),
    );
  }

  /**
   * Redis lists a replica in CLUSTER SLOTS only once it has replicated something (a fresh
   * Cluster's are left out): keys written on every master until every node lists them all.
   */
  async function untilReplicasListed(config: RedisConfig): Promise<void> {
    const writer = createRedisClient(config);
    try {
      for (let tag = 0; tag < 30; tag += 1) await writer.set(`{w${tag}}${config.keyPrefix}`, 'x');
    } finally {
      writer.disconnect();
    }
    await untilState(
      'every node to list a replica beside each master in CLUSTER SLOTS',
      () => Promise.all(cluster.nodes.map((node) => node.call('CLUSTER', 'SLOTS'))),
      (maps) =>
        (maps as unknown[][][]).every((map) => map.every((range) => range.length >= 4))
          ? true
          : undefined,
    );
  }

  it('reads every node up with its role, then a killed master down and its promoted replica as master', async () => {
    const config = redisClusterConfig(cluster.seeds, uniquePrefix('connstate'));
    await untilReplicasListed(config);
    const { client, metrics } = open(config);
    const before = await everyNodeUp();
    expect(before.filter((series) => series.includes(' master ')).length).toBe(3);
    await untilSeries('every node up with its role', metrics, before);

    const key = `{victim}${uniquePrefix('connstate')}`;
    const victim = await cluster.masterOf(key);
    await cluster.killMaster(victim);
    const promoted = await cluster.awaitPromotion(key, victim);
    const after = before.map((series) => {
      if (series.startsWith(`${victim.address} `)) return `${victim.address} master 0`;
      if (series.startsWith(`${promoted.address} `)) return `${promoted.address} master 1`;
      return series;
    });
    // A command on the victim's slot makes the client read the new slot map.
    await untilSeries('the victim down and the promoted replica master', metrics, after, () =>
      client.set(key, 'here'),
    );
  }, 90_000);
});

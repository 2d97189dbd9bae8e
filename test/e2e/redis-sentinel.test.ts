import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisAddress } from '../../src/backends/redis/client.js';
import { redisConfig } from '../support/redis-config.js';
import type { RedisProcess } from '../support/redis-process.js';
import {
  SENTINEL_DOWN_AFTER_MS,
  startRedisSentinels,
  type RedisSentinels,
} from '../support/redis-sentinels.js';
import { killCliChildren } from '../support/run-cli.js';
import { startTopologyGateways, type TopologyGateways } from '../support/topology-gateways.js';
import { describeGatewaysOnTopology } from '../support/topology-suite.js';

// Issue 14, point 5's ground: the gateway as it is today behind Redis Sentinel (1 master,
// 1 replica, 3 sentinels with quorum 2: processes of this file's own), with two gateway
// processes in sentinel mode. The phases of a failover are printed, never bounded (docs/ARCHITECTURE.md,
// design decisions).

let set: RedisSentinels;
let gateways: TopologyGateways;
/** The master the failover test kills. */
let killed: RedisProcess | undefined;

beforeAll(async () => {
  set = await startRedisSentinels();
  gateways = await startTopologyGateways('sentinel', {
    mode: 'sentinel',
    nodes: set.sentinelAddresses,
    sentinelName: set.name,
  });
}, 120_000);

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateways?.close();
  await set?.stop();
});

describe('a Sentinel set of 1 master, 1 replica and 3 sentinels on loopback', () => {
  it('names the first server as master on every sentinel; it takes writes, its replica refuses them', async () => {
    const [first, replica] = set.servers;
    expect(await set.master()).toBe(first);
    for (const sentinel of set.sentinels)
      expect(await sentinel.call('SENTINEL', 'get-master-addr-by-name', set.name)).toEqual([
        '127.0.0.1',
        String(first?.port),
      ]);
    const key = `${gateways.keyPrefix}probe`;
    expect(await first?.call('SET', key, 'here')).toBe('OK');
    await expect(replica?.call('SET', key, 'there')).rejects.toThrow(/^READONLY/);
  });
});

describeGatewaysOnTopology({
  mode: 'sentinel',
  failoverLabel: `Sentinel failover (down-after-milliseconds ${SENTINEL_DOWN_AFTER_MS})`,
  gateways: () => gateways,
  runningServers: () =>
    set.servers.filter((server) => server.pid !== undefined).map((server) => server.address),
  async killMaster() {
    killed = await set.killMaster();
  },
  async awaitPromotion() {
    if (killed !== undefined) await set.awaitPromotion(killed);
  },
  // One breaker for the client, named as its connection lines name it.
  breakerTarget: () =>
    redisAddress({
      ...redisConfig('redis://127.0.0.1:6379', gateways.keyPrefix),
      mode: 'sentinel',
      nodes: [...set.sentinelAddresses],
      sentinelName: set.name,
    }),
});

describe('a killed master, restarted', () => {
  it('rejoins as a replica of the one promoted in its place', async () => {
    const [first, promoted] = set.servers;
    if (killed === undefined) throw new Error('the failover test killed no master');
    expect(killed).toBe(first);
    await set.restart(killed);
    expect(await set.master()).toBe(promoted);
    expect(await killed.call('ROLE')).toEqual([
      'slave',
      '127.0.0.1',
      promoted?.port,
      'connected',
      expect.any(Number),
    ]);
  }, 60_000);
});

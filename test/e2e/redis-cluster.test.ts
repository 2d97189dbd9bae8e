import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLUSTER_NODE_TIMEOUT_MS,
  startRedisCluster,
  type RedisCluster,
} from '../support/redis-cluster.js';
import type { RedisProcess } from '../support/redis-process.js';
import { killCliChildren } from '../support/run-cli.js';
import { startTopologyGateways, type TopologyGateways } from '../support/topology-gateways.js';
import { describeGatewaysOnTopology } from '../support/topology-suite.js';

// Issue 14, point 5's ground: the gateway as it is today on a real Redis Cluster of 3
// masters and 3 replicas (redis-server processes of this file's own, `redis-cli --cluster
// create`), with two gateway processes in cluster mode. Every key of one prefix shares the
// prefix's hash tag, so one master holds them all: killing that master is the failover that
// matters. The phases of a failover are printed, never bounded (README design decisions).

let cluster: RedisCluster;
let gateways: TopologyGateways;
/** The master the failover test kills. */
let killed: RedisProcess | undefined;

beforeAll(async () => {
  cluster = await startRedisCluster();
  gateways = await startTopologyGateways('cluster', { mode: 'cluster', nodes: cluster.seeds });
}, 120_000);

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateways?.close();
  await cluster?.stop();
});

/** A key in the slot of every key the gateways write (their prefix's hash tag). */
const slotKey = (): string => `${gateways.keyPrefix}probe`;

describe('a Redis Cluster of 3 masters and 3 replicas on loopback', () => {
  it("names the master of a key's slot: it takes the key, every other node redirects it there", async () => {
    const key = slotKey();
    const master = await cluster.masterOf(key);
    expect(await master.call('SET', key, 'here')).toBe('OK');
    expect(await cluster.replicasOf(master)).toHaveLength(1);
    const redirect = `MOVED ${await cluster.slotOf(key)} ${master.address}`;
    for (const node of cluster.nodes.filter((other) => other !== master))
      await expect(node.call('GET', key)).rejects.toThrow(redirect);
  });
});

describeGatewaysOnTopology({
  mode: 'cluster',
  failoverLabel: `Cluster failover (cluster-node-timeout ${CLUSTER_NODE_TIMEOUT_MS} ms)`,
  gateways: () => gateways,
  runningServers: () =>
    cluster.nodes.filter((node) => node.pid !== undefined).map((node) => node.address),
  async killMaster() {
    killed = await cluster.masterOf(slotKey());
    await cluster.killMaster(killed);
  },
  async awaitPromotion() {
    if (killed !== undefined) await cluster.awaitPromotion(slotKey(), killed);
  },
  // One breaker per master, named by its host:port in the client's slot map.
  breakerTarget: () => killed?.address ?? '',
});

describe('a killed master, restarted', () => {
  it('rejoins as a replica of the one promoted in its place', async () => {
    if (killed === undefined) throw new Error('the failover test killed no master');
    await cluster.restart(killed);
    const master = await cluster.masterOf(slotKey());
    expect(master).not.toBe(killed);
    expect(await cluster.replicasOf(master)).toEqual([killed]);
    expect(await killed.call('ROLE')).toEqual([
      'slave',
      '127.0.0.1',
      master.port,
      'connected',
      expect.any(Number),
    ]);
  }, 60_000);
});

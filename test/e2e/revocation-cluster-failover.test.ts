import { afterAll, beforeAll } from 'vitest';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import type { RedisProcess } from '../support/redis-process.js';
import { describeRevocationThroughFailover } from '../support/revocation-failover-suite.js';

// Issue 14, point 3 on a Redis Cluster of 3 masters and 3 replicas of this file's own: each
// worker's subscription stands on a master chosen at random, and the master failed over is
// the one under gateway A's first worker (so at least that worker loses its subscription).

let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);

afterAll(() => cluster?.stop());

/** A key whose slot `master` serves, to await its replica's promotion by. */
async function keyServedBy(master: RedisProcess): Promise<string> {
  for (let i = 0; ; i += 1) {
    const key = `probe-${i}`;
    if ((await cluster.masterOf(key)) === master) return key;
  }
}

describeRevocationThroughFailover({
  mode: 'cluster',
  redis: () => ({ mode: 'cluster', nodes: cluster.seeds }),
  masterToFail([first]) {
    const node = cluster.nodes.find((candidate) => candidate.address === first);
    if (node === undefined) throw new Error(`no node of the Cluster at ${String(first)}`);
    return Promise.resolve(node);
  },
  async failOver(master) {
    const key = await keyServedBy(master);
    await cluster.killMaster(master);
    await cluster.awaitPromotion(key, master);
  },
  restart: (master) => cluster.restart(master),
});

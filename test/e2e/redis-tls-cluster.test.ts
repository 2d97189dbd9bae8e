import { afterAll, beforeAll } from 'vitest';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { redisClusterConfig } from '../support/redis-config.js';
import { describeRedisOverTls } from '../support/redis-tls-suite.js';

// Issue 15, point 2: rediss:// with a CA file reaches a Redis Cluster whose 3 masters and 3
// replicas speak TLS only, to clients, on the Cluster bus and for replication.

const ca = createTestCa('Redis Cluster CA');
const otherCa = createTestCa('Other CA');
let cluster: RedisCluster;

beforeAll(async () => {
  const node = ca.issue('redis-node', { commonName: 'localhost', peer: true, ...LOOPBACK });
  cluster = await startRedisCluster({
    tls: { caFile: ca.certFile, certFile: node.certFile, keyFile: node.keyFile },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  ca.remove();
  otherCa.remove();
});

describeRedisOverTls('a Redis Cluster', {
  caFile: ca.certFile,
  otherCaFile: otherCa.certFile,
  gatewayRedis: () => ({ mode: 'cluster', nodes: cluster.seeds, tls: { caFile: ca.certFile } }),
  servers: () => cluster.seeds,
  config: (keyPrefix, caFile) => ({
    ...redisClusterConfig(cluster.seeds, keyPrefix),
    tls: { caFile },
  }),
});

import { startRedisCluster } from '../support/redis-cluster.js';
import { describeRedisOverTls } from '../support/redis-tls-suite.js';

// Issue 15, point 2: rediss:// with a CA file reaches a Redis Cluster whose 3 masters and 3
// replicas speak TLS only, to clients, on the Cluster bus and for replication.

describeRedisOverTls('a Redis Cluster', async (tls) => {
  const cluster = await startRedisCluster({ tls });
  return {
    redis: { mode: 'cluster', nodes: cluster.seeds },
    servers: cluster.seeds,
    stop: () => cluster.stop(),
  };
});

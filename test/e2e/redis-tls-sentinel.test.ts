import { startRedisSentinels } from '../support/redis-sentinels.js';
import { describeRedisOverTls } from '../support/redis-tls-suite.js';

// Issue 15, point 2: rediss:// with a CA file reaches a Sentinel set (1 master, 1 replica, 3
// sentinels) whose servers and sentinels speak TLS only, to clients and to each other.

describeRedisOverTls('a Sentinel set', async (tls) => {
  const set = await startRedisSentinels({ tls });
  return {
    redis: { mode: 'sentinel', nodes: set.sentinelAddresses, sentinelName: set.name },
    servers: set.servers.map((server) => server.address),
    stop: () => set.stop(),
  };
});

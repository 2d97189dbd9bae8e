import { afterAll, beforeAll } from 'vitest';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { redisConfig } from '../support/redis-config.js';
import { startRedisSentinels, type RedisSentinels } from '../support/redis-sentinels.js';
import { describeRedisOverTls } from '../support/redis-tls-suite.js';

// Issue 15, point 2: rediss:// with a CA file reaches a Sentinel set (1 master, 1 replica, 3
// sentinels) whose servers and sentinels speak TLS only, to clients and to each other.

const ca = createTestCa('Redis Sentinel CA');
const otherCa = createTestCa('Other CA');
let set: RedisSentinels;

beforeAll(async () => {
  const node = ca.issue('redis-node', { commonName: 'localhost', peer: true, ...LOOPBACK });
  set = await startRedisSentinels({
    tls: { caFile: ca.certFile, certFile: node.certFile, keyFile: node.keyFile },
  });
}, 120_000);

afterAll(async () => {
  await set?.stop();
  ca.remove();
  otherCa.remove();
});

describeRedisOverTls('a Sentinel set', {
  caFile: ca.certFile,
  otherCaFile: otherCa.certFile,
  gatewayRedis: () => ({
    mode: 'sentinel',
    nodes: set.sentinelAddresses,
    sentinelName: set.name,
    tls: { caFile: ca.certFile },
  }),
  servers: () => set.servers.map((server) => server.address),
  config: (keyPrefix, caFile) => ({
    ...redisConfig('redis://127.0.0.1:6379', keyPrefix),
    mode: 'sentinel',
    nodes: [...set.sentinelAddresses],
    sentinelName: set.name,
    tls: { caFile },
  }),
});

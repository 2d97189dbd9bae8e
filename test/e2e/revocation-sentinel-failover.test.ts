import { afterAll, beforeAll } from 'vitest';
import { startRedisSentinels, type RedisSentinels } from '../support/redis-sentinels.js';
import { describeRevocationThroughFailover } from '../support/revocation-failover-suite.js';

// Issue 14, point 3 behind Redis Sentinel (1 master, 1 replica, 3 sentinels of this file's
// own): every worker's subscription stands on the master, so its failover moves them all.

let set: RedisSentinels;

beforeAll(async () => {
  set = await startRedisSentinels();
}, 120_000);

afterAll(() => set?.stop());

describeRevocationThroughFailover({
  mode: 'sentinel',
  redis: () => ({ mode: 'sentinel', nodes: set.sentinelAddresses, sentinelName: set.name }),
  masterToFail: () => set.master(),
  async failOver(master) {
    const killed = await set.killMaster();
    if (killed !== master) throw new Error(`killed ${killed.address}, not ${master.address}`);
    await set.awaitPromotion(killed);
  },
  restart: (master) => set.restart(master),
});

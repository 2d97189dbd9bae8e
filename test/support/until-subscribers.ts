import { Redis } from 'ioredis';
import { redisLayout } from '../../src/backends/redis/layout.js';

/**
 * Resolves once `count` connections subscribe to the prefix's revocation channel, so a test
 * never publishes into a channel nobody listens to yet. Each attempt is one Redis round trip.
 */
export async function untilSubscribers(
  redisUrl: string,
  keyPrefix: string,
  count: number,
  deadlineMs = 5_000,
): Promise<void> {
  const channel = redisLayout(keyPrefix).channel;
  const redis = new Redis(redisUrl);
  try {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const reply = (await redis.pubsub('NUMSUB', channel)) as [string, number];
      if (Number(reply[1]) >= count) return;
      if (Date.now() > deadline) {
        throw new Error(`${channel} has ${String(reply[1])} subscribers, wanted ${count}`);
      }
    }
  } finally {
    redis.disconnect();
  }
}

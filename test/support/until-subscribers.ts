import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import { redisLayout } from '../../src/backends/redis/layout.js';

/**
 * Resolves once `count` connections subscribe to the prefix's revocation channel, so a test
 * never publishes into a channel nobody listens to yet. Each attempt is one Redis round trip
 * to each of `redisUrls`, whose counts add up: a Cluster's subscribers are spread over its
 * nodes, and PUBSUB NUMSUB counts only the node asked.
 */
export async function untilSubscribers(
  redisUrls: string | readonly string[],
  keyPrefix: string,
  count: number,
  deadlineMs = 5_000,
  /** A CA for rediss:// URLs. */
  options: { tls?: ConnectionOptions } = {},
): Promise<void> {
  const channel = redisLayout(keyPrefix).channel;
  const clients = (typeof redisUrls === 'string' ? [redisUrls] : redisUrls).map(
    (url) => new Redis(url, options),
  );
  try {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const replies = await Promise.all(
        clients.map(async (redis) => (await redis.pubsub('NUMSUB', channel)) as [string, number]),
      );
      const subscribed = replies.reduce((sum, [, subscribers]) => sum + Number(subscribers), 0);
      if (subscribed >= count) return;
      if (Date.now() > deadline) {
        throw new Error(`${channel} has ${String(subscribed)} subscribers, wanted ${count}`);
      }
    }
  } finally {
    for (const redis of clients) redis.disconnect();
  }
}

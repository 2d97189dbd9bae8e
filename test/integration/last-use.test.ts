import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startInProcessGateway } from '../support/in-process-gateway.js';
import { startTestRedis, type TestRedis } from '../support/redis-server.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// last_used_at through a gateway on Redis: kept without a Redis write per request, written
// in one batch (the timer's, or the one at shutdown), and shown by GET /keys.

// A Redis of this file's own: MONITOR (watchCommands) fails in ioredis when another client's
// command reaches it between its MONITOR's OK and the switch to monitoring mode ("Command queue
// state error"), as the suite's other files, sharing one Redis, can send at any time.
let redis: TestRedis;
let redisUrl: string;
let upstream: EchoUpstream;

beforeAll(async () => {
  redis = await startTestRedis();
  redisUrl = redis.url;
  upstream = await startEchoUpstream();
});

afterAll(async () => {
  await upstream?.close();
  await redis?.stop();
});

/** Every command Redis runs that names a key under `prefix`, as MONITOR reports it. */
async function watchCommands(prefix: string): Promise<{ seen: string[][]; stop(): void }> {
  const client = new Redis(redisUrl);
  const monitor = await client.monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((arg) => arg.startsWith(prefix))) seen.push(args);
  });
  return {
    seen,
    stop() {
      monitor.disconnect();
      client.disconnect();
    },
  };
}

/** A gateway on `prefix` writing last uses once an hour (so only at shutdown), subscribed. */
async function startHourlyGateway(prefix: string) {
  const running = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    config: { keys: { lastUsedIntervalSec: 3600 } },
  });
  await untilSubscribers(redisUrl, prefix, 1);
  return running;
}

const isScript = (args: string[]) => /^eval(sha)?$/i.test(args[0] ?? '');

describe('last use of a pair', () => {
  it('sends no Redis command for cached requests, and writes last_used_at once at shutdown', async () => {
    const prefix = uniquePrefix('lastuse');
    const pair = { key: 'ak_lastuse_busy', secret: 'busy-secret-0123456789', subject: 'busy' };
    await seedKey(redisUrl, prefix, pair);
    const running = await startHourlyGateway(prefix);
    const commands = await watchCommands(prefix);
    try {
      const headers = { authorization: basicHeader(pair.key, pair.secret) };
      const before = Date.now();
      expect((await send(running.url, '/accounts', { headers })).status).toBe(200);
      // The first request read the pair (and consulted the lockout's scripts).
      expect(commands.seen.map((args) => args[0]?.toLowerCase())).toContain('hgetall');
      const afterCheck = commands.seen.length;
      for (let i = 0; i < 49; i += 1)
        expect((await send(running.url, '/accounts', { headers })).status).toBe(200);
      // The 49 cache hits sent nothing.
      expect(commands.seen.slice(afterCheck)).toEqual([]);

      await running.close();
      const atShutdown = commands.seen.slice(afterCheck);
      // One script run for the batch, naming the pair: EVALSHA, sent again as EVAL when this
      // Redis does not hold the script yet (NOSCRIPT), and nothing else.
      const scripts = atShutdown.filter(isScript);
      expect([['evalsha'], ['evalsha', 'eval']]).toContainEqual(
        scripts.map((args) => args[0]?.toLowerCase()),
      );
      for (const args of scripts)
        expect(args).toContain(redisLayout(prefix).key(pair.key, pair.subject));
      // Inside it (MONITOR shows a script's own commands too), one write: the HSET.
      expect(atShutdown.filter((args) => args[0]?.toLowerCase() === 'hset')).toHaveLength(1);
      const redis = new Redis(redisUrl);
      try {
        const usedAt = await redis.hget(
          redisLayout(prefix).key(pair.key, pair.subject),
          'last_used_at',
        );
        expect(Date.parse(usedAt ?? '')).toBeGreaterThanOrEqual(before - 1);
        expect(Date.parse(usedAt ?? '')).toBeLessThanOrEqual(Date.now());
      } finally {
        redis.disconnect();
      }
    } finally {
      commands.stop();
      await running.close();
    }
  });

  it("writes many subjects' uses in one script run on one Redis, not one per subject", async () => {
    const prefix = uniquePrefix('lastusemany');
    const pairs = Array.from({ length: 5 }, (_, i) => ({
      key: `ak_lastuse_many${i}`,
      secret: `many-secret-0123456789-${i}`,
      subject: `many-${i}`,
    }));
    for (const pair of pairs) await seedKey(redisUrl, prefix, pair);
    const running = await startHourlyGateway(prefix);
    try {
      for (const pair of pairs) {
        const headers = { authorization: basicHeader(pair.key, pair.secret) };
        expect((await send(running.url, '/accounts', { headers })).status).toBe(200);
      }
      const commands = await watchCommands(prefix);
      try {
        await running.close();
        const scripts = commands.seen.filter(isScript);
        // EVALSHA, and EVAL after it when this Redis does not hold the script yet.
        expect([['evalsha'], ['evalsha', 'eval']]).toContainEqual(
          scripts.map((args) => args[0]?.toLowerCase()),
        );
        for (const pair of pairs)
          expect(scripts[0]).toContain(redisLayout(prefix).key(pair.key, pair.subject));
      } finally {
        commands.stop();
      }
    } finally {
      await running.close();
    }
  });

  it('shows last_used_at in GET /keys once a batch is written, null before any use', async () => {
    const prefix = uniquePrefix('lastuseview');
    const used = { key: 'ak_lastuse_used', secret: 'used-secret-0123456789', subject: 'viewer' };
    const idle = { key: 'ak_lastuse_idle', secret: 'idle-secret-0123456789', subject: 'viewer' };
    await seedKey(redisUrl, prefix, used);
    await seedKey(redisUrl, prefix, idle);
    const running = await startInProcessGateway({
      redisUrl,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      config: { keys: { lastUsedIntervalSec: 1 } },
    });
    try {
      const headers = { authorization: basicHeader(used.key, used.secret) };
      const before = Date.now();
      // The listing's own Basic check is a use of `used`; the timer writes it within a second
      // (polled: the write sends the test no event; the test's timeout ends a write that never
      // comes).
      let views: { key: string; last_used_at: string | null }[] = [];
      for (;;) {
        const res = await send(running.url, '/keys', { headers });
        expect(res.status).toBe(200);
        views = (res.json as { data: typeof views }).data;
        if (views.find((v) => v.key === used.key)?.last_used_at != null) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const usedView = views.find((v) => v.key === used.key);
      expect(Date.parse(usedView?.last_used_at ?? '')).toBeGreaterThanOrEqual(before - 1);
      expect(views.find((v) => v.key === idle.key)?.last_used_at).toBeNull();
    } finally {
      await running.close();
    }
  });
});

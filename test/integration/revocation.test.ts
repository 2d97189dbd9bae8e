import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { openRedisStore } from '../support/redis-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { pollStatus } from '../support/poll-status.js';
import { redisConfig } from '../support/redis-config.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { sample } from '../support/scrape-metric.js';
import { seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Far beyond every test's timeout: only a revocation event or a flush can explain a 401, so
// the polls below need no deadline of their own (a clock read under load would only flake).
const CACHE_TTL_SEC = 300;
const RESUBSCRIBES = 'gateway_revocation_resubscribes_total';
const LAG = 'gateway_revocation_lag_seconds';

const prefix = uniquePrefix('revocation');
// `CLIENT KILL TYPE pubsub` drops every subscriber of a server: this file has a Redis of its
// own so it cannot cut the subscriptions of test files running beside it.
let redis: TestRedis;
let upstream: EchoUpstream;
let gateways: RunningGateway[] = [];
let revoker: CredentialStore;
let admin: Redis;

function request(
  gateway: RunningGateway,
  pair: { key: string; secret: string },
): Promise<Response> {
  return fetch(`${gateway.url}/accounts`, {
    headers: { authorization: basicHeader(pair.key, pair.secret) },
  });
}

beforeAll(async () => {
  redis = await startLocalRedis();
  upstream = await startEchoUpstream();
  gateways = await Promise.all(
    [1, 2].map(() =>
      startInProcessGateway({
        redisUrl: redis.url,
        keyPrefix: prefix,
        upstreamUrl: upstream.url,
        cacheTtlSec: CACHE_TTL_SEC,
      }),
    ),
  );
  revoker = openRedisStore(redisConfig(redis.url, prefix));
  admin = new Redis(redis.url);
  // Both gateways listen on the revocation channel before any test revokes anything.
  await untilSubscribers(redis.url, prefix, 2);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await revoker.close();
  admin.disconnect();
  await upstream.close();
  await redis.stop();
});

describe('revocation across gateways sharing one Redis', () => {
  it('makes a revoked pair fail with 401 on every gateway long before the cache TTL', async () => {
    const pair = { key: 'ak_revoked', secret: 'revoked-secret-0123456789', subject: 'alice' };
    await seedKey(redis.url, prefix, pair);
    for (const gateway of gateways) {
      // Twice: the first verifies and caches, the second is served from the cache.
      for (let i = 0; i < 2; i += 1) {
        const res = await request(gateway, pair);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual(ECHO_BODY);
      }
    }

    await expect(revoker.revokeKey(pair.key, new Date().toISOString())).resolves.toMatchObject({
      key: pair.key,
      status: 'revoked',
    });

    const results = await Promise.all(
      gateways.map((gateway) => pollStatus(() => request(gateway, pair), 401)),
    );
    console.log(
      `revocation reached both gateways after ${results.map((r) => r.elapsedMs.toFixed(1)).join(' ms, ')} ms`,
    );
    for (const result of results) expectGatewayError(result.answer, 'invalid_credentials');
    // And it stays rejected: no later request finds a stale entry.
    for (const gateway of gateways) expect((await request(gateway, pair)).status).toBe(401);
  });

  it('keeps serving other cached pairs of the subject when one pair is revoked', async () => {
    const kept = { key: 'ak_kept', secret: 'kept-secret-0123456789', subject: 'bob' };
    const dropped = { key: 'ak_dropped', secret: 'dropped-secret-0123456789', subject: 'bob' };
    await seedKey(redis.url, prefix, kept);
    await seedKey(redis.url, prefix, dropped);
    const [gateway] = gateways;
    if (gateway === undefined) throw new Error('no gateway');
    expect((await request(gateway, kept)).status).toBe(200);
    expect((await request(gateway, dropped)).status).toBe(200);

    await revoker.revokeKey(dropped.key, new Date().toISOString());
    await pollStatus(() => request(gateway, dropped), 401);

    // Delete the kept pair's hash behind the gateway's back (no event): only its cache
    // entry can still let it through, so this shows the eviction was not a flush.
    await admin.del(redisLayout(prefix).key(kept.key, kept.subject));
    const res = await request(gateway, kept);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(ECHO_BODY);
  });

  it('flushes the cache after the subscription drops and comes back, so a missed change takes effect', async () => {
    const pair = { key: 'ak_rotated', secret: 'old-secret-0123456789', subject: 'carol' };
    const newSecret = 'new-secret-0123456789';
    await seedKey(redis.url, prefix, pair);
    for (const gateway of gateways) expect((await request(gateway, pair)).status).toBe(200);

    // Another service changes the hash directly and publishes nothing.
    await admin.hset(
      redisLayout(prefix).key(pair.key, pair.subject),
      'secret_hash',
      await bcrypt.hash(newSecret, TEST_BCRYPT_COST),
    );
    // Still cached: nothing told the gateways.
    for (const gateway of gateways) expect((await request(gateway, pair)).status).toBe(200);

    const killed = (await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')) as number;
    expect(killed).toBe(2);

    const results = await Promise.all(
      gateways.map((gateway) => pollStatus(() => request(gateway, pair), 401)),
    );
    console.log(
      `cache flushed after the subscription dropped: ${results.map((r) => r.elapsedMs.toFixed(1)).join(' ms, ')} ms`,
    );
    for (const result of results) expectGatewayError(result.answer, 'invalid_credentials');
    for (const gateway of gateways) {
      const res = await request(gateway, { key: pair.key, secret: newSecret });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(ECHO_BODY);
    }

    // Both resubscribed, each flushing once: a revocation after the drop still reaches them.
    await untilSubscribers(redis.url, prefix, 2);
    for (const gateway of gateways)
      expect(sample(await gateway.gateway.metrics.scrape(), RESUBSCRIBES)).toBe(1);
    const next = { key: 'ak_after_drop', secret: 'after-drop-secret-0123456789', subject: 'carol' };
    await seedKey(redis.url, prefix, next);
    for (const gateway of gateways) expect((await request(gateway, next)).status).toBe(200);
    await revoker.revokeKey(next.key, new Date().toISOString());
    for (const gateway of gateways) {
      await pollStatus(() => request(gateway, next), 401);
    }
  });
});

describe('the revocation lag, on a gateway whose clock stands still', () => {
  const clockMs = Date.parse('2026-11-22T10:00:00.000Z');
  let clocked: RunningGateway;

  beforeAll(async () => {
    clocked = await startInProcessGateway({
      redisUrl: redis.url,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      cacheTtlSec: CACHE_TTL_SEC,
      now: () => clockMs,
    });
    await untilSubscribers(redis.url, prefix, 3);
  });

  afterAll(() => clocked?.close());

  const lagMetric = async (): Promise<{
    count: number;
    sum: number;
    upTo: (le: string) => number;
  }> => {
    const text = await clocked.gateway.metrics.scrape();
    return {
      count: sample(text, `${LAG}_count`),
      sum: sample(text, `${LAG}_sum`),
      upTo: (le) => sample(text, `${LAG}_bucket{le="${le}"}`),
    };
  };

  /** A pair cached by the clocked gateway, then revoked by another writer with `message`. */
  const cachedThenPublished = async (name: string, message: (key: string) => string) => {
    const pair = { key: `ak_${name}`, secret: `${name}-secret-0123456789`, subject: name };
    await seedKey(redis.url, prefix, pair);
    expect((await request(clocked, pair)).status).toBe(200);
    await admin.hset(redisLayout(prefix).key(pair.key, pair.subject), 'status', 'revoked');
    await admin.publish(redisLayout(prefix).channel, message(pair.key));
    await pollStatus(() => request(clocked, pair), 401);
  };

  it('applies a message of the earlier form (no time) and counts no lag for it', async () => {
    const before = await lagMetric();
    await cachedThenPublished('untimed', (key) => `key:${key}`);
    expect((await lagMetric()).count).toBe(before.count);
  });

  it('observes the lag of a timed message, publish time to eviction, in its histogram', async () => {
    const before = await lagMetric();
    await cachedThenPublished('timed', (key) => `key:${key} ${clockMs - 250}`);
    const after = await lagMetric();
    expect(after.count).toBe(before.count + 1);
    expect(after.sum - before.sum).toBeCloseTo(0.25, 9);
    // Buckets resolve 1 ms to 1 s: 250 ms is in le="0.25" (bounds are inclusive), not below.
    expect(after.upTo('0.1') - before.upTo('0.1')).toBe(0);
    expect(after.upTo('0.25') - before.upTo('0.25')).toBe(1);
  });

  it("counts a message published by a clock ahead of the gateway's as no lag, not a negative one", async () => {
    const before = await lagMetric();
    await cachedThenPublished('ahead', (key) => `key:${key} ${clockMs + 5_000}`);
    const after = await lagMetric();
    expect(after.count).toBe(before.count + 1);
    expect(after.sum).toBe(before.sum);
    expect(after.upTo('0.001') - before.upTo('0.001')).toBe(1);
  });

  it("observes the lag of the gateway's own scripts, which stamp Redis's time", async () => {
    const pair = { key: 'ak_scripted', secret: 'scripted-secret-0123456789', subject: 'dave' };
    await seedKey(redis.url, prefix, pair);
    expect((await request(clocked, pair)).status).toBe(200);
    const before = await lagMetric();
    await revoker.revokeKey(pair.key, new Date().toISOString());
    await pollStatus(() => request(clocked, pair), 401);
    // Redis's clock runs on while this gateway's stands still: only the count is certain.
    expect((await lagMetric()).count).toBe(before.count + 1);
  });
});

import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import {
  clock,
  DAY_MS,
  iso,
  keyRecord,
  now,
  retention,
  START_MS,
} from '../support/credential-store-contract.js';
import { countingRedis } from '../support/counting-redis.js';
import { walked } from '../support/expiring-pairs-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The pairs ending soon on Redis (issue 29, point 4), beyond the contract every store passes
// (expiring-pairs-contract.ts): the hash of each pair has the last word over the index a writer
// may have left behind, the walk crosses SCAN's batches and other keys, and the count is shared
// by the gateways on one Redis, one of them counting per interval.

const url = inject('redisUrl');
let prefix: string;
let redis: Redis;
const opened: CredentialStore[] = [];

function store(): CredentialStore {
  const made = openRedisStore(redisConfig(url, prefix), { now, retention });
  opened.push(made);
  return made;
}

beforeEach(() => {
  clock.ms = START_MS;
  prefix = uniquePrefix('expiring');
  redis = new Redis(url);
});

afterEach(async () => {
  redis.disconnect();
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

const inDays = (days: number): string => iso(START_MS + days * DAY_MS);

describe('the pairs ending soon on Redis', () => {
  it('reads each pair’s hash: not one whose expiry a writer moved later, nor one a writer revoked, leaving the index as it was', async () => {
    const s = store();
    const k = redisLayout(prefix);
    for (const key of ['ak_moved', 'ak_revoked', 'ak_kept'])
      await s.createKey(keyRecord(key, 'wes', { expiresAt: inDays(10) }), 10);
    await redis.hset(k.key('ak_moved', 'wes'), 'expires_at', inDays(90));
    await redis.hset(k.key('ak_revoked', 'wes'), { status: 'revoked', revoked_at: inDays(-1) });
    expect([...(await walked(s, START_MS + 30 * DAY_MS)).keys()]).toEqual(['ak_kept']);
  });

  it('walks past SCAN’s batches and thousands of other keys', async () => {
    const s = store();
    const k = redisLayout(prefix);
    const other = redis.pipeline();
    for (let i = 0; i < 3_000; i += 1)
      other.set(`${prefix}{${k.tagOf(String(i))}}:other:${String(i)}`, '1');
    await other.exec();
    const made: string[] = [];
    for (let i = 0; i < 150; i += 1) {
      const key = `ak_batch_${String(i).padStart(3, '0')}`;
      await s.createKey(keyRecord(key, `batch-${String(i)}`, { expiresAt: inDays(2) }), 10);
      made.push(key);
    }
    expect([...(await walked(s, START_MS + 7 * DAY_MS)).keys()].sort()).toEqual(made);
  });

  it('shares the count: another gateway reads it with one command, and counts again only once the claim of the interval has lapsed', async () => {
    const first = store();
    await first.createKey(keyRecord('ak_shared', 'sam', { expiresAt: inDays(3) }), 10);
    const counted = await first.countExpiring(60_000);
    expect(counted).toEqual({ countedAtMs: START_MS, within: { '7d': 1, '30d': 1 } });

    const counting = countingRedis(redisConfig(url, prefix));
    const second = openRedisStore(redisConfig(url, prefix), {
      client: counting.client,
      now,
      retention,
    });
    opened.push(second);
    await second.ping();
    counting.reset();
    await expect(second.countExpiring(60_000)).resolves.toEqual(counted);
    expect(counting.sent()).toEqual(['get']);

    // An interval later on the stores' clock, with the claim still held: the latest count,
    // and no walk.
    await first.createKey(keyRecord('ak_shared_2', 'sam', { expiresAt: inDays(20) }), 10);
    clock.ms = START_MS + 60_000;
    counting.reset();
    await expect(second.countExpiring(60_000)).resolves.toEqual(counted);
    expect(counting.sent()).toEqual(['get', 'set']);

    // Once the claim has lapsed (Redis's own clock), the next gateway that asks counts.
    await redis.del(redisLayout(prefix).expiringCountClaim);
    counting.reset();
    await expect(second.countExpiring(60_000)).resolves.toEqual({
      countedAtMs: START_MS + 60_000,
      within: { '7d': 1, '30d': 2 },
    });
    expect(counting.sent()).toContain('scan');
    await expect(first.countExpiring(60_000)).resolves.toEqual({
      countedAtMs: START_MS + 60_000,
      within: { '7d': 1, '30d': 2 },
    });
  });

  it('claims the next count for one interval, and keeps a count three intervals', async () => {
    const s = store();
    await s.countExpiring(60_000);
    const k = redisLayout(prefix);
    const claim = await redis.pttl(k.expiringCountClaim);
    expect(claim).toBeGreaterThan(0);
    expect(claim).toBeLessThanOrEqual(60_000);
    const kept = await redis.pttl(k.expiringCount);
    expect(kept).toBeGreaterThan(60_000);
    expect(kept).toBeLessThanOrEqual(180_000);
  });

  it('counts again over a stored count it cannot read', async () => {
    const s = store();
    await s.createKey(keyRecord('ak_garbled', 'gil', { expiresAt: inDays(3) }), 10);
    await redis.set(redisLayout(prefix).expiringCount, '{"counted_at_ms":"soon"}');
    await expect(s.countExpiring(60_000)).resolves.toEqual({
      countedAtMs: START_MS,
      within: { '7d': 1, '30d': 1 },
    });
  });
});

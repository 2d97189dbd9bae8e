import bcrypt from 'bcrypt';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FIRST_PAGE, type CredentialStore } from '../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../src/backends/memory/credential-store.js';
import { Redis } from 'ioredis';
import { openRedisStore } from '../support/redis-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { countingRedis } from '../support/counting-redis.js';
import {
  clock,
  credentialStoreContract,
  DAY_MS,
  HASH,
  iso,
  keyRecord,
  now,
  RETAIN_DAYS,
  retention,
  START_MS,
  summary,
  type StoreUnderTest,
} from '../support/credential-store-contract.js';
import { expiringPairsContract } from '../support/expiring-pairs-contract.js';
import { keyRollContract } from '../support/key-roll-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { sessionStoreContract } from '../support/session-store-contract.js';
import { freePort, startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { auditScriptKeys, type ScriptKeyAudit } from '../support/script-key-audit.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

/**
 * The Redis of this file's own, watched: no script any test below runs may touch a key it was
 * not given in KEYS (script-keys.test.ts says why).
 */
let url: string;
let ownRedis: TestRedis;
let audit: ScriptKeyAudit;

beforeAll(async () => {
  ownRedis = await startLocalRedis();
  url = ownRedis.url;
  audit = await auditScriptKeys(url);
});

/**
 * A store's configuration on the watched Redis. MONITOR's stream is parsed in this process,
 * beside the stores: a command may wait on it longer than a gateway's timeout, which nothing
 * here tests (redis-command-timeout.test.ts does).
 */
function watchedConfig(prefix: string): RedisConfig {
  return { ...redisConfig(url, prefix), commandTimeoutMs: 10_000 };
}

afterAll(async () => {
  const undeclared = await audit.undeclared();
  audit.stop();
  await ownRedis.stop();
  expect(undeclared).toEqual([]);
});

function memoryUnderTest(): Promise<StoreUnderTest> {
  const store = createMemoryStore({}, now, retention);
  return Promise.resolve({
    store,
    observer: store,
    subscribed: () => Promise.resolve(),
    close: () => store.close(),
  });
}

credentialStoreContract('the memory', memoryUnderTest);
sessionStoreContract('the memory', memoryUnderTest);
keyRollContract('the memory', memoryUnderTest);
expiringPairsContract('the memory', memoryUnderTest);

function redisUnderTest(): Promise<StoreUnderTest> {
  // A fresh prefix per test: each one starts from an empty keyspace.
  const prefix = uniquePrefix('contract');
  const store = openRedisStore(watchedConfig(prefix), { now, retention });
  // A second gateway's store on the same Redis: revocations must reach it too.
  const observer = openRedisStore(watchedConfig(prefix), { now, retention });
  return Promise.resolve({
    store,
    observer,
    subscribed: () => untilSubscribers(url, prefix, 1),
    close: async () => {
      await Promise.all([store.close(), observer.close()]);
    },
  });
}

credentialStoreContract('the Redis', redisUnderTest);
sessionStoreContract('the Redis', redisUnderTest);
keyRollContract('the Redis', redisUnderTest);
expiringPairsContract('the Redis', redisUnderTest);

describe('the Redis credential store reading what another service wrote', () => {
  const prefix = uniquePrefix('layout');
  let store: CredentialStore;

  beforeEach(() => {
    store = openRedisStore(watchedConfig(prefix));
  });

  afterEach(async () => {
    await store.close();
  });

  it('reads back a pair written with the documented layout (HSET + SADD)', async () => {
    const before = Date.now();
    await seedKey(url, prefix, {
      key: 'ak_webapp1',
      secret: 'written-by-the-web-app-0123456789',
      subject: 'dora',
      label: 'made by the web app',
    });

    const record = await store.getKey('ak_webapp1');
    expect(record).toEqual({
      key: 'ak_webapp1',
      subject: 'dora',
      secretHash: expect.stringMatching(/^\$2b\$04\$/) as unknown,
      label: 'made by the web app',
      status: 'active',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) as unknown,
      scopes: [],
    });
    if (record === undefined) throw new Error('unreachable');
    expect(Date.parse(record.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    await expect(
      bcrypt.compare('written-by-the-web-app-0123456789', record.secretHash),
    ).resolves.toBe(true);
    await expect(store.listKeys('dora')).resolves.toEqual([summary(record)]);
  });

  it('reads scopes, expires_at and a user written with the documented layout', async () => {
    const redis = new Redis(url);
    const k = redisLayout(prefix);
    try {
      // An id without a tag: its key-tag entry says where its hash is.
      await redis.set(k.keyTag('ak_webapp9'), k.tagOf('gus'));
      await redis.hset(k.key('ak_webapp9', 'gus'), {
        secret_hash: HASH,
        subject: 'gus',
        label: '',
        status: 'active',
        created_at: '2024-05-01T10:00:00.000Z',
        expires_at: '2099-01-01T00:00:00.000Z',
        scopes: 'accounts:read keys',
      });
      await redis.hset(k.user('gus@example.com'), {
        password_hash: HASH,
        subject: 'gus',
        created_at: '2024-05-01T10:00:00.000Z',
        scopes: 'accounts:read',
      });
    } finally {
      redis.disconnect();
    }
    await expect(store.getKey('ak_webapp9')).resolves.toMatchObject({
      expiresAt: '2099-01-01T00:00:00.000Z',
      scopes: ['accounts:read', 'keys'],
    });
    await expect(store.getUser('gus@example.com')).resolves.toMatchObject({
      scopes: ['accounts:read'],
    });
  });

  it('does not recreate the hash of a pair deleted before its last use is written', async () => {
    await seedKey(url, prefix, {
      key: 'ak_deleted',
      secret: 'a-secret-0123456789',
      subject: 'hal',
    });
    const redis = new Redis(url);
    try {
      await redis.del(redisLayout(prefix).key('ak_deleted', 'hal'));
      await store.recordLastUse(new Map([['ak_deleted', '2024-06-01T12:00:00.000Z']]));
      expect(await redis.exists(redisLayout(prefix).key('ak_deleted', 'hal'))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('counts a pair written by another service against the active cap', async () => {
    await seedKey(url, prefix, {
      key: 'ak_webapp2',
      secret: 'a-secret-0123456789',
      subject: 'erin',
    });

    await expect(store.createKey(keyRecord('ak_erin2', 'erin'), 1)).resolves.toBe(false);
    await expect(store.createKey(keyRecord('ak_erin2', 'erin'), 2)).resolves.toBe(true);
  });

  it('reads a pair another service wrote as revoked as revoked, and lists it', async () => {
    await seedKey(url, prefix, {
      key: 'ak_webapp3',
      secret: 'a-secret-0123456789',
      subject: 'fred',
      status: 'revoked',
    });

    const record = await store.getKey('ak_webapp3');
    expect(record?.status).toBe('revoked');
    await expect(store.listKeys('fred')).resolves.toEqual([
      {
        key: 'ak_webapp3',
        subject: 'fred',
        label: '',
        status: 'revoked',
        createdAt: record?.createdAt,
        scopes: [],
      },
    ]);
    // A revoked pair does not count against the cap.
    await expect(store.createKey(keyRecord('ak_fred2', 'fred'), 1)).resolves.toBe(true);
  });

  it('counts and lists a pair whose expiry another service moved later, past its first end and that end’s retention', async () => {
    const clocked = openRedisStore(watchedConfig(prefix), { now, retention });
    const redis = new Redis(url);
    try {
      clock.ms = START_MS;
      const firstEnd = START_MS + 3_600_000;
      await clocked.createKey(keyRecord('ak_moved', 'ida', { expiresAt: iso(firstEnd) }), 5);
      // A writer moves the expiry and leaves …:ends as it was. (It sets the TTL too, which
      // this test leaves alone: the stores' clock here is years behind Redis's.)
      const laterEnd = firstEnd + 90 * DAY_MS;
      await redis.hset(redisLayout(prefix).key('ak_moved', 'ida'), 'expires_at', iso(laterEnd));

      clock.ms = firstEnd + 1;
      await expect(clocked.countActiveKeys('ida')).resolves.toBe(1);
      clock.ms = firstEnd + RETAIN_DAYS * DAY_MS + 1;
      await expect(clocked.createKey(keyRecord('ak_moved_2', 'ida'), 2)).resolves.toBe(true);
      expect((await clocked.listKeys('ida'))?.map((r) => r.key).sort()).toEqual([
        'ak_moved',
        'ak_moved_2',
      ]);
      await expect(clocked.getKey('ak_moved')).resolves.toMatchObject({
        expiresAt: iso(laterEnd),
      });
    } finally {
      redis.disconnect();
      await clocked.close();
      clock.ms = START_MS;
    }
  });

  it('revokes with the subject’s pairs one another service indexed without adding it to the active set', async () => {
    const redis = new Redis(url);
    try {
      const k = redisLayout(prefix);
      await redis.set(k.keyTag('ak_unlisted'), k.tagOf('jan'));
      await redis.hset(k.key('ak_unlisted', 'jan'), {
        secret_hash: HASH,
        subject: 'jan',
        status: 'active',
        created_at: '2024-05-01T10:00:00.000Z',
      });
      await redis.zadd(
        k.subjectPairs('jan'),
        Date.parse('2024-05-01T10:00:00.000Z'),
        'ak_unlisted',
      );
      await expect(store.revokeSubjectKeys('jan', new Date().toISOString())).resolves.toEqual([
        'ak_unlisted',
      ]);
      await expect(store.getKey('ak_unlisted')).resolves.toMatchObject({ status: 'revoked' });
    } finally {
      redis.disconnect();
    }
  });

  it('keeps the last usable pair when another service revoked the other one without taking it out of the active set', async () => {
    await store.createKey(keyRecord('ak_kim_1', 'kim'), 5);
    await store.createKey(keyRecord('ak_kim_2', 'kim'), 5);
    const redis = new Redis(url);
    try {
      await redis.hset(redisLayout(prefix).key('ak_kim_2', 'kim'), {
        status: 'revoked',
        revoked_at: '2024-06-01T11:00:00.000Z',
      });
    } finally {
      redis.disconnect();
    }
    await expect(
      store.revokeKey('ak_kim_1', '2024-06-01T12:00:00.000Z', { keepLastActive: true }),
    ).rejects.toMatchObject({ code: 'conflict' });
  });
});

describe("the Redis credential store's index of a subject's pairs", () => {
  let prefix: string;
  let redis: Redis;

  beforeEach(() => {
    prefix = uniquePrefix('index');
    redis = new Redis(url);
    clock.ms = START_MS;
  });

  afterEach(() => {
    redis.disconnect();
  });

  /** Writes pairs of `subject` straight to Redis: hash, sorted index and active set. */
  async function writePairs(subject: string, count: number): Promise<void> {
    const k = redisLayout(prefix);
    const batch = redis.pipeline();
    for (let i = 0; i < count; i += 1) {
      const key = `ak_${subject}_${String(i).padStart(5, '0')}`;
      const created = START_MS - DAY_MS + i;
      batch
        .hset(k.key(key, subject), {
          secret_hash: HASH,
          subject,
          label: '',
          status: 'active',
          created_at: new Date(created).toISOString(),
        })
        .zadd(k.subjectPairs(subject), created, key)
        .sadd(k.subjectActive(subject), key);
    }
    await batch.exec();
  }

  it('reads a page in two commands (its ids, then their hashes declared), however many pairs the subject has', async () => {
    // Before the sorted index: SMEMBERS, then one HGETALL per pair (1,501 commands here). A
    // script names every key it reads, so the first run answers with the page's ids and the
    // second reads their hashes.
    const counting = countingRedis(watchedConfig(prefix));
    const store = openRedisStore(watchedConfig(prefix), {
      client: counting.client,
      now,
      retention,
    });
    try {
      await writePairs('many', 1_500);
      await writePairs('few', 3);
      // The first run loads the script (EVALSHA answers NOSCRIPT, then EVAL): once per Redis.
      await store.listKeys('nobody');
      counting.reset();
      const first = await store.listKeys('many');
      expect(counting.sent()).toEqual(['evalsha', 'evalsha']);
      expect(first).toHaveLength(1_000);
      expect(first?.[0]?.key).toBe('ak_many_01499');
      counting.reset();
      const second = await store.listKeys('many', { ...FIRST_PAGE, after: first?.at(-1)?.key });
      expect(counting.sent()).toEqual(['evalsha', 'evalsha']);
      expect(second).toHaveLength(500);
      expect(second?.at(-1)?.key).toBe('ak_many_00000');
      counting.reset();
      await expect(store.listKeys('few')).resolves.toHaveLength(3);
      expect(counting.sent()).toEqual(['evalsha', 'evalsha']);
      // A subject without pairs needs no hash: one run.
      counting.reset();
      await expect(store.listKeys('nobody')).resolves.toEqual([]);
      expect(counting.sent()).toEqual(['evalsha']);
    } finally {
      await store.close();
    }
  });

  it('folds the SET index of an older writer into the sorted index when it first touches the subject', async () => {
    const k = redisLayout(prefix);
    const old = [
      ['ak_old_1', '2024-05-01T10:00:00.000Z'],
      ['ak_old_2', '2024-05-03T10:00:00.000Z'],
      ['ak_old_3', '2024-05-02T10:00:00.000Z'],
    ] as const;
    for (const [key, createdAt] of old) {
      await redis.hset(k.key(key, 'olga'), {
        secret_hash: HASH,
        subject: 'olga',
        label: '',
        status: 'active',
        created_at: createdAt,
      });
      await redis.sadd(k.subjectLegacyKeys('olga'), key);
      await redis.sadd(k.subjectActive('olga'), key);
    }
    const store = openRedisStore(watchedConfig(prefix), { now, retention });
    try {
      expect((await store.listKeys('olga'))?.map((r) => r.key)).toEqual([
        'ak_old_2',
        'ak_old_3',
        'ak_old_1',
      ]);
      expect(await redis.exists(k.subjectLegacyKeys('olga'))).toBe(0);
      expect(await redis.zscore(k.subjectPairs('olga'), 'ak_old_1')).toBe(
        String(Date.parse('2024-05-01T10:00:00.000Z')),
      );
      // A writer that still adds to the old set is folded in on the next touch.
      await redis.hset(k.key('ak_old_4', 'olga'), {
        secret_hash: HASH,
        subject: 'olga',
        status: 'active',
        created_at: '2024-05-04T10:00:00.000Z',
      });
      await redis.sadd(k.subjectLegacyKeys('olga'), 'ak_old_4');
      expect((await store.listKeys('olga', { limit: 1, order: 'desc' }))?.[0]?.key).toBe(
        'ak_old_4',
      );
    } finally {
      await store.close();
    }
  });

  it('lists past thousands of index entries whose hashes are gone (pairs that left by their TTL together), dropping them', async () => {
    const k = redisLayout(prefix);
    await writePairs('lea', 3);
    // Newer than the three pairs, so every page starts with them.
    const batch = redis.pipeline();
    for (let i = 0; i < 2_500; i += 1)
      batch.zadd(k.subjectPairs('lea'), START_MS + i, `ak_gone_${i}`);
    await batch.exec();
    const store = openRedisStore(watchedConfig(prefix), { now, retention });
    try {
      expect((await store.listKeys('lea', { limit: 2, order: 'desc' }))?.map((r) => r.key)).toEqual(
        ['ak_lea_00002', 'ak_lea_00001'],
      );
      expect(await redis.zcard(k.subjectPairs('lea'))).toBe(3);
    } finally {
      await store.close();
    }
  });

  it("gives a pair's hash a TTL of its end plus the retention once its end is known", async () => {
    const k = redisLayout(prefix);
    const store = openRedisStore(watchedConfig(prefix), { now, retention });
    const retainMs = RETAIN_DAYS * DAY_MS;
    try {
      const inAnHour = new Date(START_MS + 3_600_000).toISOString();
      await store.createKey(keyRecord('ak_ttl_expiring', 'tina', { expiresAt: inAnHour }), 10);
      await store.createKey(keyRecord('ak_ttl_forever', 'tina'), 10);
      await store.createKey(keyRecord('ak_ttl_revoked', 'tina'), 10);
      await store.revokeKey('ak_ttl_revoked', new Date(START_MS).toISOString());
      // PTTL counts down from when it was set: within a day of the exact figure is plenty.
      const pttl = (key: string) => redis.pttl(k.key(key, 'tina'));
      const expiring = await pttl('ak_ttl_expiring');
      expect(expiring).toBeLessThanOrEqual(3_600_000 + retainMs);
      expect(expiring).toBeGreaterThan(3_600_000 + retainMs - DAY_MS);
      const revoked = await pttl('ak_ttl_revoked');
      expect(revoked).toBeLessThanOrEqual(retainMs);
      expect(revoked).toBeGreaterThan(retainMs - DAY_MS);
      expect(await pttl('ak_ttl_forever')).toBe(-1);
    } finally {
      await store.close();
    }
  });
});

describe('the Redis credential store without a reachable Redis', () => {
  // Nothing ever listens on the port, so a rejection is the store's own answer, not a wait
  // that ended; how soon it comes (commandTimeoutMs) is redis-command-timeout.test.ts's.
  it('rejects with credential_store_unavailable instead of answering "unknown"', async () => {
    const store = openRedisStore(
      redisConfig(`redis://127.0.0.1:${await freePort()}`, uniquePrefix('dead')),
    );
    try {
      for (const operation of [
        () => store.getKey('ak_any'),
        () => store.listKeys('alice'),
        () => store.getUser('alice@example.com'),
        () => store.ping(),
      ]) {
        const error = await operation().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(GatewayError);
        expect(error).toMatchObject({ code: 'credential_store_unavailable', status: 503 });
      }
    } finally {
      await store.close();
    }
  });
});

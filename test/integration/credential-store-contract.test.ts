import bcrypt from 'bcrypt';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type {
  CredentialStore,
  KeyRecord,
  Revocation,
  UserRecord,
} from '../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../src/credentials/memory-store.js';
import { Redis } from 'ioredis';
import { createRedisStore, redisKeys } from '../../src/credentials/redis-store.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { redisConfig } from '../support/redis-config.js';
import { freePort } from '../support/redis-server.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

/**
 * What one test gets: `store` to act on, and `observer`, whose subscribe() listener must
 * see what `store` announces (the same store in memory; another instance on the same Redis).
 */
interface StoreUnderTest {
  readonly store: CredentialStore;
  readonly observer: CredentialStore;
  /** Resolves once the observer's subscription is live. */
  readonly subscribed: () => Promise<void>;
  close(): Promise<void>;
}

/** Expiries far from any test's clock: one long gone, one years ahead. */
const PAST = '2001-01-01T00:00:00.000Z';
const FUTURE = '2099-01-01T00:00:00.000Z';

const HASH = '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq';

function keyRecord(key: string, subject: string, overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    key,
    subject,
    secretHash: HASH,
    label: `label of ${key}`,
    status: 'active',
    createdAt: '2024-05-01T10:00:00.000Z',
    scopes: [],
    ...overrides,
  };
}

function userRecord(username: string, subject: string): UserRecord {
  return {
    username,
    subject,
    passwordHash: HASH,
    createdAt: '2024-05-01T10:00:00.000Z',
    scopes: [],
  };
}

/** Subscribes the observer and returns the first revocation it hears. */
function nextRevocation(target: StoreUnderTest): Promise<Revocation> {
  return new Promise((resolve) => {
    target.observer.subscribe(resolve, () => undefined);
  });
}

function byKey(a: KeyRecord, b: KeyRecord): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The behaviour every CredentialStore must have, whatever keeps the data. */
function credentialStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} credential store`, () => {
    let target: StoreUnderTest;
    let store: CredentialStore;

    beforeEach(async () => {
      target = await makeStore();
      store = target.store;
    });

    afterEach(async () => {
      await target.close();
    });

    it('answers undefined for a key it does not hold', async () => {
      await expect(store.getKey('ak_unknown')).resolves.toBeUndefined();
    });

    it('returns a created pair by key, and lists only the pairs of that subject', async () => {
      const a1 = keyRecord('ak_alice1', 'alice');
      const a2 = keyRecord('ak_alice2', 'alice', { label: '' });
      const b1 = keyRecord('ak_bob1', 'bob');
      for (const record of [a1, b1, a2])
        await expect(store.createKey(record, 10)).resolves.toBe(true);

      await expect(store.getKey('ak_alice1')).resolves.toEqual(a1);
      await expect(store.getKey('ak_bob1')).resolves.toEqual(b1);
      expect((await store.listKeys('alice')).sort(byKey)).toEqual([a1, a2]);
      await expect(store.listKeys('bob')).resolves.toEqual([b1]);
      await expect(store.listKeys('carol')).resolves.toEqual([]);
    });

    it('refuses a new pair once the subject holds maxActive active pairs', async () => {
      await expect(store.createKey(keyRecord('ak_cap1', 'alice'), 2)).resolves.toBe(true);
      await expect(store.createKey(keyRecord('ak_cap2', 'alice'), 2)).resolves.toBe(true);
      await expect(store.createKey(keyRecord('ak_cap3', 'alice'), 2)).resolves.toBe(false);

      await expect(store.getKey('ak_cap3')).resolves.toBeUndefined();
      // The cap is per subject: another subject is not affected.
      await expect(store.createKey(keyRecord('ak_cap4', 'bob'), 2)).resolves.toBe(true);
    });

    it('refuses to create a pair whose key already exists, keeping the original', async () => {
      const original = keyRecord('ak_taken', 'alice');
      await expect(store.createKey(original, 10)).resolves.toBe(true);

      await expect(
        store.createKey(
          keyRecord('ak_taken', 'alice', { secretHash: HASH.replace('C6', 'D7') }),
          10,
        ),
      ).resolves.toBe(false);
      await expect(store.createKey(keyRecord('ak_taken', 'bob'), 10)).resolves.toBe(false);
      await expect(store.getKey('ak_taken')).resolves.toEqual(original);
      await expect(store.listKeys('bob')).resolves.toEqual([]);
    });

    it('marks a revoked pair revoked and frees its place under the active cap', async () => {
      const original = keyRecord('ak_old', 'alice');
      await store.createKey(original, 1);
      await expect(store.createKey(keyRecord('ak_new', 'alice'), 1)).resolves.toBe(false);

      const revokedAt = '2024-06-01T12:00:00.000Z';
      const expected = { ...original, status: 'revoked', revokedAt };
      await expect(store.revokeKey('ak_old', revokedAt)).resolves.toEqual(expected);
      await expect(store.getKey('ak_old')).resolves.toEqual(expected);

      await expect(store.createKey(keyRecord('ak_new', 'alice'), 1)).resolves.toBe(true);
      expect((await store.listKeys('alice')).sort(byKey)).toEqual([
        keyRecord('ak_new', 'alice'),
        expected,
      ]);
    });

    it('refuses, with keepLastActive, to revoke the last active pair of a subject', async () => {
      await store.createKey(keyRecord('ak_one', 'alice'), 5);
      await store.createKey(keyRecord('ak_two', 'alice'), 5);
      const at = '2024-06-01T12:00:00.000Z';
      await expect(store.revokeKey('ak_one', at, { keepLastActive: true })).resolves.toMatchObject({
        status: 'revoked',
      });
      await expect(store.revokeKey('ak_two', at, { keepLastActive: true })).rejects.toMatchObject({
        code: 'conflict',
      });
      await expect(store.getKey('ak_two')).resolves.toMatchObject({ status: 'active' });
      await expect(store.revokeKey('ak_two', at)).resolves.toMatchObject({ status: 'revoked' });
    });

    it('returns the scopes a pair and a user were created with', async () => {
      const scoped = keyRecord('ak_scoped', 'alice', { scopes: ['accounts:read', 'keys'] });
      await store.createKey(scoped, 10);
      await expect(store.getKey('ak_scoped')).resolves.toEqual(scoped);
      const user = { ...userRecord('sam@example.com', 'sam'), scopes: ['accounts:read'] };
      await store.addUser(user);
      await expect(store.getUser('sam@example.com')).resolves.toEqual(user);
    });

    it('records the last use of pairs in a batch, only forward in time, never for an unknown pair', async () => {
      await store.createKey(keyRecord('ak_used1', 'alice'), 10);
      await store.createKey(keyRecord('ak_used2', 'alice'), 10);
      await store.recordLastUse(
        new Map([
          ['ak_used1', '2024-06-01T12:00:00.000Z'],
          ['ak_used2', '2024-06-01T12:00:05.000Z'],
          ['ak_never_made', '2024-06-01T12:00:00.000Z'],
        ]),
      );
      await expect(store.getKey('ak_used1')).resolves.toMatchObject({
        lastUsedAt: '2024-06-01T12:00:00.000Z',
      });
      // An older time (another instance's late batch) does not move it back.
      await store.recordLastUse(new Map([['ak_used2', '2024-06-01T11:00:00.000Z']]));
      await expect(store.getKey('ak_used2')).resolves.toMatchObject({
        lastUsedAt: '2024-06-01T12:00:05.000Z',
      });
      await expect(store.getKey('ak_never_made')).resolves.toBeUndefined();
      await expect(store.listKeys('alice')).resolves.toHaveLength(2);
    });

    it('returns the expiry a pair was created with', async () => {
      const expiring = keyRecord('ak_expiring', 'alice', { expiresAt: FUTURE });
      await store.createKey(expiring, 10);
      await expect(store.getKey('ak_expiring')).resolves.toEqual(expiring);
      await expect(store.listKeys('alice')).resolves.toEqual([expiring]);
    });

    it('does not count expired pairs as active, under the cap or in the count', async () => {
      await store.createKey(keyRecord('ak_gone1', 'alice', { expiresAt: PAST }), 5);
      await store.createKey(keyRecord('ak_gone2', 'alice', { expiresAt: PAST }), 5);
      await expect(store.countActiveKeys('alice')).resolves.toBe(0);
      await expect(
        store.createKey(keyRecord('ak_live1', 'alice', { expiresAt: FUTURE }), 2),
      ).resolves.toBe(true);
      await expect(store.createKey(keyRecord('ak_live2', 'alice'), 2)).resolves.toBe(true);
      await expect(store.countActiveKeys('alice')).resolves.toBe(2);
      await expect(store.createKey(keyRecord('ak_live3', 'alice'), 2)).resolves.toBe(false);
      // Expired pairs are still listed (the holder sees them), and still refuse their key id.
      expect((await store.listKeys('alice')).map((r) => r.key).sort()).toEqual([
        'ak_gone1',
        'ak_gone2',
        'ak_live1',
        'ak_live2',
      ]);
      await expect(store.createKey(keyRecord('ak_gone1', 'alice'), 5)).resolves.toBe(false);
    });

    it('counts only unexpired pairs when keeping the last active one', async () => {
      await store.createKey(keyRecord('ak_live', 'alice'), 5);
      await store.createKey(keyRecord('ak_stale', 'alice', { expiresAt: PAST }), 5);
      const at = '2024-06-01T12:00:00.000Z';
      await expect(store.revokeKey('ak_live', at, { keepLastActive: true })).rejects.toMatchObject({
        code: 'conflict',
      });
      // Revoking an expired pair takes nothing away: it is allowed.
      await expect(
        store.revokeKey('ak_stale', at, { keepLastActive: true }),
      ).resolves.toMatchObject({ status: 'revoked' });
      await expect(store.getKey('ak_live')).resolves.toMatchObject({ status: 'active' });
    });

    it('keeps the first revocation time when a pair is revoked twice', async () => {
      const original = keyRecord('ak_twice', 'alice');
      await store.createKey(original, 10);
      const expected = { ...original, status: 'revoked', revokedAt: '2024-06-01T12:00:00.000Z' };

      await store.revokeKey('ak_twice', '2024-06-01T12:00:00.000Z');
      await expect(store.revokeKey('ak_twice', '2024-07-01T12:00:00.000Z')).resolves.toEqual(
        expected,
      );
      await expect(store.getKey('ak_twice')).resolves.toEqual(expected);
    });

    it('announces a revocation to subscribed listeners', async () => {
      await store.createKey(keyRecord('ak_announced', 'alice'), 10);
      const heard = nextRevocation(target);
      await target.subscribed();

      await store.revokeKey('ak_announced', '2024-06-01T12:00:00.000Z');

      await expect(heard).resolves.toEqual({ kind: 'key', key: 'ak_announced' });
    });

    it('answers undefined when revoking a key it does not hold', async () => {
      await expect(
        store.revokeKey('ak_unknown', '2024-06-01T12:00:00.000Z'),
      ).resolves.toBeUndefined();
      await expect(store.getKey('ak_unknown')).resolves.toBeUndefined();
    });

    it('stores, returns and removes web-app users', async () => {
      const user = userRecord('alice@example.com', 'alice');
      await expect(store.getUser('alice@example.com')).resolves.toBeUndefined();

      await expect(store.addUser(user)).resolves.toBe(true);
      await expect(store.getUser('alice@example.com')).resolves.toEqual(user);

      const changed = { ...user, passwordHash: HASH.replace('C6', 'D7') };
      await expect(store.setUserPassword('alice@example.com', changed.passwordHash)).resolves.toBe(
        true,
      );
      await expect(store.getUser('alice@example.com')).resolves.toEqual(changed);

      await expect(store.removeUser('alice@example.com')).resolves.toBe(true);
      await expect(store.getUser('alice@example.com')).resolves.toBeUndefined();
      await expect(store.removeUser('alice@example.com')).resolves.toBe(false);
    });

    it('refuses to add a username that is taken, leaving the first user as it was', async () => {
      const first = userRecord('carol@example.com', 'carol');
      await expect(store.addUser(first)).resolves.toBe(true);
      const results = await Promise.all(
        ['dave', 'erin'].map((subject) =>
          store.addUser({ ...userRecord('carol@example.com', subject), passwordHash: HASH }),
        ),
      );
      expect(results).toEqual([false, false]);
      await expect(store.getUser('carol@example.com')).resolves.toEqual(first);
    });

    it('sets no password for a user that does not exist, and does not create one', async () => {
      await expect(store.setUserPassword('nobody@example.com', HASH)).resolves.toBe(false);
      await expect(store.getUser('nobody@example.com')).resolves.toBeUndefined();
    });

    it('counts the active pairs of a subject, revoked ones not', async () => {
      await expect(store.countActiveKeys('counted')).resolves.toBe(0);
      await store.createKey(keyRecord('ak_counted_1', 'counted'), 5);
      await store.createKey(keyRecord('ak_counted_2', 'counted'), 5);
      await expect(store.countActiveKeys('counted')).resolves.toBe(2);
      await store.revokeKey('ak_counted_1', '2024-06-01T12:00:00.000Z');
      await expect(store.countActiveKeys('counted')).resolves.toBe(1);
    });

    it("announces the subject's revocation when a user is removed", async () => {
      await store.addUser(userRecord('bob@example.com', 'bob'));
      const heard = nextRevocation(target);
      await target.subscribed();

      await store.removeUser('bob@example.com');

      await expect(heard).resolves.toEqual({ kind: 'subject', subject: 'bob' });
    });

    it('resolves ping while it can answer', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}

credentialStoreContract('the memory', () => {
  const store = createMemoryStore();
  return Promise.resolve({
    store,
    observer: store,
    subscribed: () => Promise.resolve(),
    close: () => store.close(),
  });
});

credentialStoreContract('the Redis', () => {
  // A fresh prefix per test: each one starts from an empty keyspace on the shared Redis.
  const url = inject('redisUrl');
  const prefix = uniquePrefix('contract');
  const store = createRedisStore(redisConfig(url, prefix));
  // A second gateway's store on the same Redis: revocations must reach it too.
  const observer = createRedisStore(redisConfig(url, prefix));
  return Promise.resolve({
    store,
    observer,
    subscribed: () => untilSubscribers(url, prefix, 1),
    close: async () => {
      await Promise.all([store.close(), observer.close()]);
    },
  });
});

describe('the Redis credential store reading what another service wrote', () => {
  const url = inject('redisUrl');
  const prefix = uniquePrefix('layout');
  let store: CredentialStore;

  beforeEach(() => {
    store = createRedisStore(redisConfig(url, prefix));
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
    await expect(store.listKeys('dora')).resolves.toEqual([record]);
  });

  it('reads scopes, expires_at and a user written with the documented layout', async () => {
    const redis = new Redis(url);
    const k = redisKeys(prefix);
    try {
      await redis.hset(k.key('ak_webapp9'), {
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
      await redis.del(redisKeys(prefix).key('ak_deleted'));
      await store.recordLastUse(new Map([['ak_deleted', '2024-06-01T12:00:00.000Z']]));
      expect(await redis.exists(redisKeys(prefix).key('ak_deleted'))).toBe(0);
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
    await expect(store.listKeys('fred')).resolves.toEqual([record]);
    // A revoked pair does not count against the cap.
    await expect(store.createKey(keyRecord('ak_fred2', 'fred'), 1)).resolves.toBe(true);
  });
});

describe('the Redis credential store without a reachable Redis', () => {
  // Nothing ever listens on the port, so a rejection is the store's own answer, not a wait
  // that ended; how soon it comes (commandTimeoutMs) is redis-command-timeout.test.ts's.
  it('rejects with credential_store_unavailable instead of answering "unknown"', async () => {
    const store = createRedisStore(
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

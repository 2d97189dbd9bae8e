import bcrypt from 'bcrypt';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  FIRST_PAGE,
  type CredentialStore,
  type KeyPage,
  type KeyRecord,
  type KeySummary,
  type Revocation,
  type UserRecord,
} from '../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../src/backends/memory/credential-store.js';
import { Redis } from 'ioredis';
import { openRedisStore } from '../support/redis-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { countingRedis } from '../support/counting-redis.js';
import { redisConfig } from '../support/redis-config.js';
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

/**
 * The stores' clock in this suite: a fixed instant a test may move on, so ends and their
 * retention are exact. The records' own times are shortly before it.
 */
const START_MS = Date.parse('2024-06-02T00:00:00.000Z');
const clock = { ms: START_MS };
const now = (): number => clock.ms;
const DAY_MS = 86_400_000;
const iso = (ms: number): string => new Date(ms).toISOString();
/** The retention every store of this suite keeps ended pairs for. */
const RETAIN_DAYS = 30;
const retention = { retainEndedSec: RETAIN_DAYS * 86_400 };

/** Expiries around the clock: one a day before it, one years ahead. */
const PAST = '2024-06-01T00:00:00.000Z';
const FUTURE = '2099-01-01T00:00:00.000Z';

const HASH = '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq';
/** Other well-formed hashes, for replacements. */
const OTHER_HASH = HASH.replace('C6', 'D7');
const THIRD_HASH = HASH.replace('C6', 'E8');

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

/** What a listing returns of a pair: all of it but the hash of its secret. */
function summary({ secretHash: _, ...rest }: KeyRecord): KeySummary {
  return rest;
}

function byKey(a: KeySummary, b: KeySummary): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The behaviour every CredentialStore must have, whatever keeps the data. */
function credentialStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} credential store`, () => {
    let target: StoreUnderTest;
    let store: CredentialStore;

    beforeEach(async () => {
      clock.ms = START_MS;
      target = await makeStore();
      store = target.store;
    });

    /** The whole first page (every pair, in these tests): one exists whenever no cursor is given. */
    const listed = async (subject: string, page?: KeyPage): Promise<KeySummary[]> => {
      const records = await store.listKeys(subject, page);
      if (records === undefined) throw new Error(`no page for ${subject}`);
      return records;
    };

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
      expect((await listed('alice')).sort(byKey)).toEqual([a1, a2].map(summary));
      await expect(store.listKeys('bob')).resolves.toEqual([summary(b1)]);
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
      const expected: KeyRecord = { ...original, status: 'revoked', revokedAt };
      await expect(store.revokeKey('ak_old', revokedAt)).resolves.toEqual(expected);
      await expect(store.getKey('ak_old')).resolves.toEqual(expected);

      await expect(store.createKey(keyRecord('ak_new', 'alice'), 1)).resolves.toBe(true);
      expect((await listed('alice')).sort(byKey)).toEqual(
        [keyRecord('ak_new', 'alice'), expected].map(summary),
      );
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
      await expect(store.listKeys('alice')).resolves.toEqual([summary(expiring)]);
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
      expect((await listed('alice')).map((r) => r.key).sort()).toEqual([
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

    it('replaces the hash of a pair only while it still holds the expected one', async () => {
      const original = keyRecord('ak_rehashed', 'alice');
      await store.createKey(original, 10);

      await expect(
        store.replaceHash({ kind: 'key', key: 'ak_rehashed' }, HASH, OTHER_HASH),
      ).resolves.toBe(true);
      await expect(store.getKey('ak_rehashed')).resolves.toEqual({
        ...original,
        secretHash: OTHER_HASH,
      });
      // The old hash is no longer there: a second writer that read it changes nothing.
      await expect(
        store.replaceHash({ kind: 'key', key: 'ak_rehashed' }, HASH, THIRD_HASH),
      ).resolves.toBe(false);
      await expect(store.getKey('ak_rehashed')).resolves.toMatchObject({ secretHash: OTHER_HASH });
    });

    it("replaces a user's password hash only while it still holds the expected one", async () => {
      const user = userRecord('rehashed@example.com', 'alice');
      await store.addUser(user);
      const owner = { kind: 'user', username: 'rehashed@example.com' } as const;

      await expect(store.replaceHash(owner, HASH, OTHER_HASH)).resolves.toBe(true);
      await expect(store.getUser('rehashed@example.com')).resolves.toEqual({
        ...user,
        passwordHash: OTHER_HASH,
      });
      // A new password set meanwhile (users passwd) is not overwritten by a late rehash.
      await store.setUserPassword('rehashed@example.com', THIRD_HASH);
      await expect(store.replaceHash(owner, OTHER_HASH, HASH)).resolves.toBe(false);
      await expect(store.getUser('rehashed@example.com')).resolves.toMatchObject({
        passwordHash: THIRD_HASH,
      });
    });

    it('lets exactly one of two concurrent replacements of the same hash win', async () => {
      await store.createKey(keyRecord('ak_raced', 'alice'), 10);
      const owner = { kind: 'key', key: 'ak_raced' } as const;

      const results = await Promise.all([
        store.replaceHash(owner, HASH, OTHER_HASH),
        store.replaceHash(owner, HASH, THIRD_HASH),
      ]);

      expect(results.filter(Boolean)).toHaveLength(1);
      await expect(store.getKey('ak_raced')).resolves.toMatchObject({
        secretHash: results[0] === true ? OTHER_HASH : THIRD_HASH,
      });
    });

    it('replaces nothing for a pair or user it does not hold, and creates neither', async () => {
      await expect(
        store.replaceHash({ kind: 'key', key: 'ak_none' }, HASH, OTHER_HASH),
      ).resolves.toBe(false);
      await expect(
        store.replaceHash({ kind: 'user', username: 'none@example.com' }, HASH, OTHER_HASH),
      ).resolves.toBe(false);
      await expect(store.getKey('ak_none')).resolves.toBeUndefined();
      await expect(store.getUser('none@example.com')).resolves.toBeUndefined();
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

    it('lists pairs in pages, newest or oldest first, the last id of a page leading to the next', async () => {
      const [first, same, last] = [
        '2024-05-01T10:00:00.000Z',
        '2024-05-02T10:00:00.000Z',
        '2024-05-03T10:00:00.000Z',
      ];
      // Three made in the same millisecond: ordered by key id, compared as bytes (B < b).
      for (const [key, createdAt] of [
        ['ak_page_c', same],
        ['ak_page_a', first],
        ['ak_page_b', same],
        ['ak_page_d', last],
        ['ak_page_B', same],
      ] as const)
        await store.createKey(keyRecord(key, 'alice', { createdAt }), 10);
      await store.createKey(keyRecord('ak_page_bob', 'bob', { createdAt: same }), 10);
      const walk = async (order: KeyPage['order']): Promise<string[]> => {
        const ids: string[] = [];
        for (;;) {
          const page = await listed('alice', { limit: 2, order, after: ids.at(-1) });
          ids.push(...page.map((r) => r.key));
          if (page.length < 2) return ids;
        }
      };
      const oldest = ['ak_page_a', 'ak_page_B', 'ak_page_b', 'ak_page_c', 'ak_page_d'];
      expect(await walk('asc')).toEqual(oldest);
      expect(await walk('desc')).toEqual([...oldest].reverse());
      expect((await listed('alice')).map((r) => r.key)).toEqual([...oldest].reverse());
      expect(await listed('alice', { limit: 1, order: 'desc' })).toEqual([
        summary(keyRecord('ak_page_d', 'alice', { createdAt: last })),
      ]);
    });

    it("answers undefined for a page after a pair that is not one of the subject's", async () => {
      await store.createKey(keyRecord('ak_cursor_a', 'alice'), 10);
      await store.createKey(keyRecord('ak_cursor_b', 'bob'), 10);
      for (const after of ['ak_cursor_none', 'ak_cursor_b'])
        await expect(
          store.listKeys('alice', { limit: 10, order: 'desc', after }),
        ).resolves.toBeUndefined();
      await expect(
        store.listKeys('alice', { limit: 10, order: 'asc', after: 'ak_cursor_a' }),
      ).resolves.toEqual([]);
    });

    it('keeps an ended pair for the retention after its end, then lists nor returns it', async () => {
      const endsLater = new Date(START_MS + 3_600_000).toISOString();
      await store.createKey(keyRecord('ak_kept', 'alice'), 10);
      await store.createKey(keyRecord('ak_expiring', 'alice', { expiresAt: endsLater }), 10);
      await store.createKey(keyRecord('ak_revoked', 'alice'), 10);
      await store.revokeKey('ak_revoked', new Date(START_MS).toISOString());
      const ids = async () => (await listed('alice')).map((r) => r.key).sort();

      clock.ms = START_MS + RETAIN_DAYS * DAY_MS - 1;
      expect(await ids()).toEqual(['ak_expiring', 'ak_kept', 'ak_revoked']);
      clock.ms = START_MS + RETAIN_DAYS * DAY_MS;
      expect(await ids()).toEqual(['ak_expiring', 'ak_kept']);
      await expect(store.getKey('ak_revoked')).resolves.toBeUndefined();
      clock.ms += 3_600_000;
      expect(await ids()).toEqual(['ak_kept']);
      await expect(store.getKey('ak_expiring')).resolves.toBeUndefined();
      await expect(store.getKey('ak_kept')).resolves.toMatchObject({ status: 'active' });
    });

    it("revokes every usable pair of a subject, announcing each, and no other subject's", async () => {
      await store.createKey(keyRecord('ak_all_1', 'alice'), 10);
      await store.createKey(keyRecord('ak_all_2', 'alice'), 10);
      await store.createKey(keyRecord('ak_all_expired', 'alice', { expiresAt: PAST }), 10);
      await store.createKey(keyRecord('ak_all_bob', 'bob'), 10);
      const heard: Revocation[] = [];
      const both = new Promise<void>((resolve) => {
        target.observer.subscribe(
          (revocation) => {
            heard.push(revocation);
            if (heard.length === 2) resolve();
          },
          () => undefined,
        );
      });
      await target.subscribed();
      const at = new Date(START_MS).toISOString();

      expect((await store.revokeSubjectKeys('alice', at)).sort()).toEqual(['ak_all_1', 'ak_all_2']);

      await both;
      expect(heard).toEqual(
        expect.arrayContaining([
          { kind: 'key', key: 'ak_all_1' },
          { kind: 'key', key: 'ak_all_2' },
        ]),
      );
      await expect(store.getKey('ak_all_1')).resolves.toMatchObject({
        status: 'revoked',
        revokedAt: at,
      });
      await expect(store.countActiveKeys('alice')).resolves.toBe(0);
      // An expired pair has ended already: it is left as it was.
      await expect(store.getKey('ak_all_expired')).resolves.toMatchObject({ status: 'active' });
      await expect(store.getKey('ak_all_bob')).resolves.toMatchObject({ status: 'active' });
      await expect(store.revokeSubjectKeys('alice', at)).resolves.toEqual([]);
    });

    it('resolves ping while it can answer', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}

credentialStoreContract('the memory', () => {
  const store = createMemoryStore({}, now, retention);
  return Promise.resolve({
    store,
    observer: store,
    subscribed: () => Promise.resolve(),
    close: () => store.close(),
  });
});

credentialStoreContract('the Redis', () => {
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
});

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
      await redis.del(redisLayout(prefix).key('ak_deleted'));
      await store.recordLastUse(new Map([['ak_deleted', '2024-06-01T12:00:00.000Z']]));
      expect(await redis.exists(redisLayout(prefix).key('ak_deleted'))).toBe(0);
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
      await redis.hset(redisLayout(prefix).key('ak_moved'), 'expires_at', iso(laterEnd));

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
      await redis.hset(k.key('ak_unlisted'), {
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
      await redis.hset(redisLayout(prefix).key('ak_kim_2'), {
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
        .hset(k.key(key), {
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
      await redis.hset(k.key(key), {
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
      await redis.hset(k.key('ak_old_4'), {
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
      const pttl = (key: string) => redis.pttl(k.key(key));
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

import { describe, expect, it, afterEach, beforeEach } from 'vitest';
import type {
  CredentialStore,
  KeyPage,
  KeyRecord,
  KeySummary,
  Revocation,
  UserRecord,
} from '../../src/credentials/credential-store.js';
import { parseFleetKey } from '../../src/credentials/verified-record.js';

// The behaviour every CredentialStore has, whatever keeps its data: run on the memory store
// and a standalone Redis (credential-store-contract.test.ts) and on a Redis Cluster
// (redis-cluster-backend.test.ts).

/**
 * What one test gets: `store` to act on, and `observer`, whose subscribe() listener must
 * see what `store` announces (the same store in memory; another instance on the same Redis).
 */
export interface StoreUnderTest {
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
export const START_MS = Date.parse('2024-06-02T00:00:00.000Z');
export const clock = { ms: START_MS };
export const now = (): number => clock.ms;
export const DAY_MS = 86_400_000;
export const iso = (ms: number): string => new Date(ms).toISOString();
/** The retention every store of this suite keeps ended pairs for. */
export const RETAIN_DAYS = 30;
export const retention = { retainEndedSec: RETAIN_DAYS * 86_400 };

/** Expiries around the clock: one a day before it, one years ahead. */
export const PAST = '2024-06-01T00:00:00.000Z';
export const FUTURE = '2099-01-01T00:00:00.000Z';

export const HASH = '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq';
/** Other well-formed hashes, for replacements. */
export const OTHER_HASH = HASH.replace('C6', 'D7');
export const THIRD_HASH = HASH.replace('C6', 'E8');

export function keyRecord(
  key: string,
  subject: string,
  overrides: Partial<KeyRecord> = {},
): KeyRecord {
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

export function userRecord(username: string, subject: string): UserRecord {
  return {
    username,
    subject,
    passwordHash: HASH,
    createdAt: '2024-05-01T10:00:00.000Z',
    scopes: [],
  };
}

/** Subscribes the observer and returns the first revocation it hears. */
/**
 * A store made fresh before each test of the calling describe (the clock at START_MS) and
 * closed after it: what every store contract starts from.
 */
export function freshStoreEach(makeStore: () => Promise<StoreUnderTest>): {
  readonly target: StoreUnderTest;
  readonly store: CredentialStore;
} {
  let target: StoreUnderTest | undefined;
  beforeEach(async () => {
    clock.ms = START_MS;
    target = await makeStore();
  });
  afterEach(async () => {
    await target?.close();
  });
  const made = (): StoreUnderTest => {
    if (target === undefined) throw new Error('no store outside a test');
    return target;
  };
  return {
    get target() {
      return made();
    },
    get store() {
      return made().store;
    },
  };
}

function nextRevocation(target: StoreUnderTest): Promise<Revocation> {
  return new Promise((resolve) => {
    target.observer.subscribe(resolve, () => undefined);
  });
}

/** What a listing returns of a pair: all of it but the hash of its secret. */
export function summary({ secretHash: _, ...rest }: KeyRecord): KeySummary {
  return rest;
}

function byKey(a: KeySummary, b: KeySummary): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The behaviour every CredentialStore must have, whatever keeps the data. */
export function credentialStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
): void {
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

      // Each change moves the token generation on: the tokens issued before it stop working.
      const changed = { ...user, passwordHash: HASH.replace('C6', 'D7'), tokenGeneration: 1 };
      await expect(store.setUserPassword('alice@example.com', changed.passwordHash)).resolves.toBe(
        true,
      );
      await expect(store.getUser('alice@example.com')).resolves.toEqual(changed);
      await store.setUserPassword('alice@example.com', HASH);
      await expect(store.getUser('alice@example.com')).resolves.toEqual({
        ...user,
        tokenGeneration: 2,
      });

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

    it("announces the subject's revocation when a user's password changes", async () => {
      await store.addUser(userRecord('pam@example.com', 'pam'));
      const heard = nextRevocation(target);
      await target.subscribed();

      await store.setUserPassword('pam@example.com', HASH.replace('C6', 'D7'));

      await expect(heard).resolves.toEqual({ kind: 'subject', subject: 'pam' });
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

    it('gives one fleet key, the same at every ask and to every store on the same data', async () => {
      const first = await store.fleetKey();

      expect(parseFleetKey(first)).toBeDefined();
      await expect(store.fleetKey()).resolves.toBe(first);
      await expect(target.observer.fleetKey()).resolves.toBe(first);
    });

    it('keeps a verified record only while the pair is active and holds the hash it is over', async () => {
      await store.createKey(keyRecord('ak_rec', 'alice'), 10);
      await store.createKey(keyRecord('ak_rec_gone', 'alice'), 10);
      await store.revokeKey('ak_rec_gone', new Date(START_MS).toISOString());

      await expect(store.keepVerifiedRecord('ak_rec', OTHER_HASH, 'v1.stale')).resolves.toBe(false);
      await expect(store.keepVerifiedRecord('ak_rec_gone', HASH, 'v1.r')).resolves.toBe(false);
      await expect(store.keepVerifiedRecord('ak_unknown', HASH, 'v1.r')).resolves.toBe(false);
      await expect(store.getKey('ak_rec')).resolves.not.toHaveProperty('verifiedRecord');
      await expect(store.keepVerifiedRecord('ak_rec', HASH, 'v1.kept')).resolves.toBe(true);

      await expect(store.getKey('ak_rec')).resolves.toMatchObject({ verifiedRecord: 'v1.kept' });
      // Neither the record nor its hash is a listing's business.
      const listed = await store.listKeys('alice');
      expect(listed?.find((pair) => pair.key === 'ak_rec')).toEqual(
        summary(keyRecord('ak_rec', 'alice')),
      );
      expect(await store.getKey('ak_unknown')).toBeUndefined();
    });

    it('deletes a verified record with a revocation, alone or of the subject, and with a new hash', async () => {
      for (const key of ['ak_rec_1', 'ak_rec_2', 'ak_rec_3'])
        await store.createKey(keyRecord(key, key === 'ak_rec_3' ? 'bob' : 'alice'), 10);
      for (const key of ['ak_rec_1', 'ak_rec_2', 'ak_rec_3'])
        await store.keepVerifiedRecord(key, HASH, `v1.${key}`);
      const at = new Date(START_MS).toISOString();

      await store.revokeKey('ak_rec_1', at);
      await store.revokeSubjectKeys('alice', at);
      await store.replaceHash({ kind: 'key', key: 'ak_rec_3' }, HASH, OTHER_HASH);

      for (const key of ['ak_rec_1', 'ak_rec_2', 'ak_rec_3'])
        await expect(store.getKey(key)).resolves.not.toHaveProperty('verifiedRecord');
    });

    it('resolves ping while it can answer', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}

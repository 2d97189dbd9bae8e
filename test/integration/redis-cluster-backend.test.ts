import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { redisLayout, singleSlotLayout } from '../../src/backends/redis/layout.js';
import { migrateSingleSlot } from '../../src/backends/redis/migrate.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { formatKeyId } from '../../src/identity/key-id.js';
import {
  credentialStoreContract,
  DAY_MS,
  HASH,
  iso,
  keyRecord,
  now,
  retention,
  START_MS,
  type StoreUnderTest,
} from '../support/credential-store-contract.js';
import { expiringPairsContract, walked } from '../support/expiring-pairs-contract.js';
import { keyRollContract } from '../support/key-roll-contract.js';
import { lockoutContract } from '../support/lockout-contract.js';
import { bucketStoreContract, TRACKED } from '../support/rate-bucket-store-contract.js';
import { auditLogContract } from '../support/audit-log-contract.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { redisClusterConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { sessionStoreContract } from '../support/session-store-contract.js';
import { uniquePrefix, uniqueSingleSlotPrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Issue 14, points 2 and 5: the Redis backend on a real Cluster of 3 masters and 3 replicas.
// Every script runs there (the credential store's, the lockout's and the buckets' contracts:
// a key of another slot than a script's first one would fail it with CROSSSLOT), and what
// earlier versions wrote in their single-slot layout (one `{…}` prefix) is still served, moved
// as it is touched, and moved whole by migrate.

let cluster: RedisCluster;
let admin: Cluster;
const backends: Backend[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  admin = new Cluster(
    cluster.seeds.map((seed) => ({ host: '127.0.0.1', port: Number(seed.split(':')[1]) })),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(backends.map((backend) => backend.credentials.close()));
  admin?.disconnect();
  await cluster?.stop();
});

/** A backend on the real clock: the lockout remembers locks until they end by it. */
function backend(prefix: string): Backend {
  const made = createRedisBackend(redisClusterConfig(cluster.seeds, prefix));
  backends.push(made);
  return made;
}

const nodeUrls = (): string[] => cluster.seeds.map((seed) => `redis://${seed}`);

function clusterUnderTest(): Promise<StoreUnderTest> {
  const prefix = uniquePrefix('ccontract');
  const store = openRedisStore(redisClusterConfig(cluster.seeds, prefix), { now, retention });
  const observer = openRedisStore(redisClusterConfig(cluster.seeds, prefix), { now, retention });
  return Promise.resolve({
    store,
    observer,
    subscribed: () => untilSubscribers(nodeUrls(), prefix, 1),
    close: async () => {
      await Promise.all([store.close(), observer.close()]);
    },
  });
}

credentialStoreContract('the Redis Cluster', clusterUnderTest);
// A session's scripts name the sessions' hash and the user's, one slot: CROSSSLOT otherwise.
sessionStoreContract('the Redis Cluster', clusterUnderTest);
keyRollContract('the Redis Cluster', clusterUnderTest);
expiringPairsContract('the Redis Cluster', clusterUnderTest);

lockoutContract({
  name: 'Redis Cluster backend',
  make: (config) => backend(uniquePrefix('clockout')).lockout(config),
});

bucketStoreContract('Redis Cluster', () => backend(uniquePrefix('cbuckets')).buckets(TRACKED));

// The fleet's stream has a slot of its own, each subject's stream its subject's: every append
// is two MULTIs of one slot each (CROSSSLOT otherwise), and `keys audit` reads one key.
auditLogContract('the Redis Cluster', (clock, settings) => {
  const prefix = uniquePrefix('caudit');
  const layout = redisLayout(prefix);
  const open = () =>
    createRedisBackend(redisClusterConfig(cluster.seeds, prefix), {
      now: () => clock.now(),
      audit: settings,
    });
  const made = open();
  const reader = open();
  const stream = (subject?: string): string =>
    subject === undefined ? layout.auditEvents : layout.subjectEvents(subject);
  return Promise.resolve({
    log: made.audit,
    reader: reader.audit,
    length: (subject) => admin.xlen(stream(subject)),
    storeTimeMs: async () => {
      // The clock of the master the fleet's stream is on: its ids come from there.
      const [sec = '0', micro = '0'] = (await admin.call('TIME')) as [string, string];
      return Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    },
    rawEntries: async (subject) =>
      (await admin.xrange(stream(subject), '-', '+')).map(([, fields]) => fields),
    ttlMs: (subject) => admin.pttl(stream(subject)),
    close: async () => {
      await Promise.all([made.credentials.close(), reader.credentials.close()]);
    },
  });
});

describe('the pairs ending soon, on a Cluster', () => {
  it('walks each master: the indexes of 40 subjects lie on all three, and each of their pairs is found', async () => {
    const prefix = uniquePrefix('cexpiring');
    const store = openRedisStore(redisClusterConfig(cluster.seeds, prefix), { now, retention });
    try {
      const made: string[] = [];
      for (let i = 0; i < 40; i += 1) {
        const key = `ak_cend_${String(i).padStart(2, '0')}`;
        const ends = { expiresAt: iso(START_MS + DAY_MS) };
        await store.createKey(keyRecord(key, `cend-${String(i)}`, ends), 10);
        made.push(key);
      }
      const pattern = redisLayout(prefix).everySubjectEnds;
      const perMaster = await Promise.all(
        admin.nodes('master').map(async (node) => {
          let [cursor, count] = ['0', 0];
          do {
            const [next, names] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            [cursor, count] = [next, count + names.length];
          } while (cursor !== '0');
          return count;
        }),
      );
      expect(perMaster).toHaveLength(3);
      expect(
        perMaster.every((count) => count > 0),
        perMaster.join(' '),
      ).toBe(true);
      expect([...(await walked(store, START_MS + 7 * DAY_MS)).keys()].sort()).toEqual(made);
    } finally {
      await store.close();
    }
  });
});

describe('the single-slot layout of earlier versions, on a Cluster', () => {
  let prefix: string;
  let singlePrefix: string;
  let store: CredentialStore;
  const layout = () => redisLayout(prefix);
  const single = () => singleSlotLayout(singlePrefix);
  const config = () => redisClusterConfig(cluster.seeds, prefix, singlePrefix);
  const created = '2024-05-01T10:00:00.000Z';

  beforeEach(() => {
    prefix = uniquePrefix('cmoved');
    singlePrefix = uniqueSingleSlotPrefix('cearlier');
    store = openRedisStore(config(), { now, retention });
  });

  afterEach(async () => {
    await store.close();
  });

  /** A self-describing id, as the gateway made them before the layout changed: the `n`th. */
  const madeBy = (subject: string, n = 0, tagOf = subject): string =>
    formatKeyId(layout().tagOf(tagOf), `${subject}${n}`.padEnd(24, 'x'));

  /**
   * A pair as earlier versions' gateways and recipes wrote it: every key under the one prefix,
   * so in one slot, written in one MULTI; `indexed: false` as a writer that left out the index.
   */
  async function writeEarlier(id: string, subject: string, indexed = true): Promise<void> {
    const s = single();
    const write = admin.multi().hset(s.key(id), {
      secret_hash: HASH,
      subject,
      label: '',
      status: 'active',
      created_at: created,
    });
    if (indexed)
      write
        .zadd(s.subjectPairs(subject), Date.parse(created), id)
        .sadd(s.subjectActive(subject), id);
    await write.exec();
  }

  const existing = async (...keys: string[]): Promise<string[]> => {
    const found: string[] = [];
    for (const key of keys) if ((await admin.exists(key)) === 1) found.push(key);
    return found;
  };

  it('serves the pairs and users earlier versions wrote from their one slot, moving nothing to read them', async () => {
    const tagged = madeBy('ole');
    await writeEarlier(tagged, 'ole');
    await writeEarlier('ak_earlier1', 'ole');
    await admin.hset(single().user('ole@example.com'), {
      password_hash: HASH,
      subject: 'ole',
      created_at: created,
    });
    await expect(store.getKey(tagged)).resolves.toMatchObject({ subject: 'ole', status: 'active' });
    await expect(store.getKey('ak_earlier1')).resolves.toMatchObject({ subject: 'ole' });
    await expect(store.getUser('ole@example.com')).resolves.toMatchObject({ subject: 'ole' });
    expect(await existing(single().key(tagged), single().subjectPairs('ole'))).toHaveLength(2);
  });

  it("moves a subject's pairs, indexes and settings under its own tag before listing or counting them, leaving nothing in the single slot", async () => {
    const tagged = madeBy('pia');
    await writeEarlier(tagged, 'pia');
    await writeEarlier('ak_earlier2', 'pia');
    await admin.hset(single().subject('pia'), 'rate_limit', '5/60');
    expect((await store.listKeys('pia'))?.map((r) => r.key).sort()).toEqual(
      ['ak_earlier2', tagged].sort(),
    );
    await expect(store.countActiveKeys('pia')).resolves.toBe(2);
    const s = single();
    expect(
      await existing(
        s.key(tagged),
        s.key('ak_earlier2'),
        s.subject('pia'),
        s.subjectPairs('pia'),
        s.subjectActive('pia'),
      ),
    ).toEqual([]);
    const l = layout();
    // In the subject's own slot, on the master that serves it.
    const master = await cluster.masterOf(l.subject('pia'));
    expect(await master.call('EXISTS', l.key(tagged, 'pia'), l.key('ak_earlier2', 'pia'))).toBe(2);
    expect(await master.call('HGET', l.subject('pia'), 'rate_limit')).toBe('5/60');
    expect(await admin.get(l.keyTag('ak_earlier2'))).toBe(l.tagOf('pia'));
    await expect(store.getKey('ak_earlier2')).resolves.toMatchObject({ subject: 'pia' });
  });

  it('revokes an earlier pair no index named once moved, and one whose id carries another tag where it is', async () => {
    const foreignTag = madeBy('rui', 0, 'someone-else');
    await writeEarlier('ak_orphan', 'rui', false);
    await writeEarlier(foreignTag, 'rui');
    const at = '2024-06-01T12:00:00.000Z';
    await expect(store.revokeKey('ak_orphan', at)).resolves.toMatchObject({ status: 'revoked' });
    expect(await existing(single().key('ak_orphan'))).toEqual([]);
    expect(await admin.hget(layout().key('ak_orphan', 'rui'), 'status')).toBe('revoked');
    await expect(store.revokeKey(foreignTag, at)).resolves.toMatchObject({ status: 'revoked' });
    expect(await admin.hget(single().key(foreignTag), 'status')).toBe('revoked');
    await expect(store.getKey(foreignTag)).resolves.toMatchObject({ status: 'revoked' });
  });

  it("lets a pair left in the single slot be revoked while the caller keeps the last one, counting its subject's pairs here too", async () => {
    const foreignTag = madeBy('vic', 0, 'someone-else');
    await writeEarlier(foreignTag, 'vic');
    const at = '2024-06-01T12:00:00.000Z';
    // Its subject's only active pair: refused.
    await expect(store.revokeKey(foreignTag, at, { keepLastActive: true })).rejects.toMatchObject({
      code: 'conflict',
    });
    await writeEarlier(madeBy('vic', 1), 'vic');
    await store.listKeys('vic');
    await expect(store.revokeKey(foreignTag, at, { keepLastActive: true })).resolves.toMatchObject({
      status: 'revoked',
    });
    expect(await admin.hget(single().key(foreignTag), 'status')).toBe('revoked');
  });

  it('merges a revocation a writer wrote under the old names after the move, when the subject is next touched', async () => {
    const id = madeBy('sol');
    await writeEarlier(id, 'sol');
    await writeEarlier(madeBy('sol', 1), 'sol');
    await store.listKeys('sol');
    // The earlier recipe, run by a writer not upgraded yet.
    const s = single();
    await admin
      .multi()
      .hset(s.key(id), { status: 'revoked', revoked_at: '2024-06-01T11:00:00.000Z' })
      .srem(s.subjectActive('sol'), id)
      .zadd(s.subjectEnds('sol'), 'LT', Date.parse('2024-06-01T11:00:00.000Z'), id)
      .exec();
    await expect(store.countActiveKeys('sol')).resolves.toBe(1);
    await expect(store.getKey(id)).resolves.toMatchObject({
      status: 'revoked',
      revokedAt: '2024-06-01T11:00:00.000Z',
    });
    expect(await existing(s.key(id), s.subjectEnds('sol'))).toEqual([]);
  });

  it('migrate says what it would move, then moves it, leaves and names what cannot move, and finds nothing more the second time', async () => {
    const s = single();
    const mismatched = madeBy('tao', 1, 'someone-else');
    await writeEarlier('ak_tao1', 'tao');
    await writeEarlier(madeBy('tao'), 'tao');
    await writeEarlier('ak_unindexed', 'tao', false);
    await writeEarlier(mismatched, 'tao');
    await admin.hset(s.subject('uma'), 'rate_limit', 'none');
    for (const username of ['tao@example.com', 'uma@example.com'])
      await admin.hset(s.user(username), {
        password_hash: HASH,
        subject: 'tao',
        created_at: created,
      });
    await admin.set(`${singlePrefix}rl:key:ak_tao1`, '1', 'PX', 60_000);
    await admin.hset(`${singlePrefix}lockout:basic:key:ak_tao1`, 'f', '1');
    const left = [{ name: mismatched, reason: 'tag-mismatch' }];
    const counts = (pairs: number, users: number, settings: number) => ({
      from: singlePrefix,
      to: prefix,
      pairs,
      users,
      settings,
      left,
      expiring: 2,
    });

    const dry = await migrateSingleSlot(config(), { apply: false });
    expect(dry).toEqual({ applied: false, ...counts(3, 2, 1) });
    expect(
      await existing(s.key('ak_tao1'), s.user('uma@example.com'), s.subject('uma')),
    ).toHaveLength(3);

    expect(await migrateSingleSlot(config(), { apply: true })).toEqual({
      applied: true,
      ...counts(3, 2, 1),
    });
    expect(await migrateSingleSlot(config(), { apply: true })).toEqual({
      applied: true,
      ...counts(0, 0, 0),
    });
    await expect(store.getUser('uma@example.com')).resolves.toMatchObject({ subject: 'tao' });
    await expect(store.getKey('ak_unindexed')).resolves.toMatchObject({ subject: 'tao' });
    expect(await admin.hget(layout().subject('uma'), 'rate_limit')).toBe('none');
    await expect(store.countActiveKeys('tao')).resolves.toBe(3);
    // The pair that cannot move stays served from where it is.
    await expect(store.getKey(mismatched)).resolves.toMatchObject({ subject: 'tao' });
  });
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createRedisClient, watchRedisConnection } from '../../src/backends/redis/client.js';
import { redisLayout, singleSlotLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { createScriptRunner, scriptFromSource } from '../../src/backends/redis/run-script.js';
import { ALL_SCRIPTS } from '../../src/backends/redis/scripts.js';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { KeyRecord } from '../../src/credentials/credential-store.js';
import type { LockoutTarget } from '../../src/protection/lockout.js';
import { redisConfig } from '../support/redis-config.js';
import { newRef } from '../support/session-store-contract.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { auditScriptKeys, type ScriptKeyAudit } from '../support/script-key-audit.js';
import { uniquePrefix, uniqueSingleSlotPrefix } from '../support/seed-redis.js';

// Every script of the Redis backend names every key it touches in KEYS: what lets Redis
// Cluster route it (a key formed inside a script may live on another node) and what Dragonfly
// requires. Redis itself refuses no such key in one slot (see script-key-audit.ts), so every
// script runs here, along each of its paths, on a Redis of this file's own that MONITOR
// watches, and each command it ran is checked against its KEYS.

const START_MS = Date.parse('2024-06-02T00:00:00.000Z');
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const HASH = '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq';
const OTHER_HASH = HASH.replace('C6', 'D7');

const clock = { ms: START_MS };
const iso = (ms: number): string => new Date(ms).toISOString();
let redis: TestRedis;
let audit: ScriptKeyAudit;
let admin: Redis;
let backend: Backend;
const prefix = uniquePrefix('keys');
const layout = redisLayout(prefix);
const singlePrefix = uniqueSingleSlotPrefix('keysold');
const single = singleSlotLayout(singlePrefix);

/**
 * The backend's configuration. MONITOR's stream is parsed in this process, beside the
 * backend: a command may wait on it longer than a gateway's timeout, which nothing here tests.
 */
function watchedConfig(): RedisConfig {
  return { ...redisConfig(redis.url, prefix, singlePrefix), commandTimeoutMs: 10_000 };
}

function pair(key: string, overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    key,
    subject: 'ann',
    secretHash: HASH,
    label: '',
    status: 'active',
    createdAt: iso(clock.ms - HOUR_MS),
    scopes: ['accounts:read'],
    ...overrides,
  };
}

beforeAll(async () => {
  redis = await startLocalRedis();
  audit = await auditScriptKeys(redis.url);
  admin = new Redis(redis.url);
  backend = createRedisBackend(watchedConfig(), {
    now: () => clock.ms,
    retention: { retainEndedSec: 30 * 86_400 },
  });
});

afterAll(async () => {
  await backend?.credentials.close();
  admin?.disconnect();
  audit?.stop();
  await redis?.stop();
});

/** Users and pairs, along every path of the pair scripts (pair-index.lua). */
async function runCredentialScripts(): Promise<void> {
  const store = backend.credentials;
  const user = { username: 'ann', subject: 'ann', passwordHash: HASH, createdAt: iso(START_MS) };
  expect(await store.addUser({ ...user, scopes: ['keys'] })).toBe(true);
  // The portal's sessions: made (an ended one dropped on the way), changed, ended, and ended
  // with the user's new password.
  const session = {
    username: 'ann',
    subject: 'ann',
    createdAtMs: START_MS,
    lastSeenMs: START_MS,
    endsAtMs: START_MS + HOUR_MS,
  };
  const [first, second] = [newRef('ann'), newRef('ann')];
  expect(await store.createSession(first, { ...session, endsAtMs: START_MS + 1 })).toBe(true);
  expect(await store.createSession(second, { ...session, lastSeenMs: START_MS + 2 })).toBe(true);
  // The ended one is gone from the hash, which lives while its sessions may.
  const sessions = layout.sessionsAt(second.tag);
  expect(await admin.hlen(sessions)).toBe(1);
  expect(await admin.pttl(sessions)).toBeGreaterThan(0);
  expect(await store.createSession(newRef('nobody'), { ...session, username: 'nobody' })).toBe(
    false,
  );
  const seen = { ...session, lastSeenMs: START_MS + 2 };
  expect(await store.replaceSession(second, seen, { ...seen, formNonce: 'n' })).toBe(true);
  expect(await store.replaceSession(second, seen, seen)).toBe(false);
  await store.endSession(first);
  expect(await store.setUserPassword('ann', OTHER_HASH)).toBe(true);
  expect(await store.getSession(second, START_MS)).toBeUndefined();
  expect(await store.replaceHash({ kind: 'user', username: 'ann' }, OTHER_HASH, HASH)).toBe(true);

  expect(await store.createKey(pair('ak_one'), 3)).toBe(true);
  expect(await store.createKey(pair('ak_soon', { expiresAt: iso(START_MS + HOUR_MS) }), 3)).toBe(
    true,
  );
  expect(await store.createKey(pair('ak_one'), 3)).toBe(false);
  expect(await store.replaceHash({ kind: 'key', key: 'ak_one' }, HASH, OTHER_HASH)).toBe(true);
  await store.recordLastUse(
    new Map([
      ['ak_one', iso(START_MS)],
      ['ak_never', iso(START_MS)],
    ]),
  );

  // An older writer's SET index, an entry whose hash is gone and another subject's pair in
  // the index: the listing folds the first in and drops the other two on its way.
  await admin.set(layout.keyTag('ak_old'), layout.tagOf('ann'));
  await admin.hset(layout.key('ak_old', 'ann'), {
    secret_hash: HASH,
    subject: 'ann',
    status: 'active',
    created_at: iso(START_MS - 2 * HOUR_MS),
  });
  await admin.sadd(layout.subjectLegacyKeys('ann'), 'ak_old');
  await admin.sadd(layout.subjectActive('ann'), 'ak_old');
  await admin.zadd(layout.subjectPairs('ann'), START_MS, 'ak_ghost');
  await admin.hset(layout.key('ak_bobs', 'ann'), { subject: 'bob', status: 'active' });
  await admin.zadd(layout.subjectPairs('ann'), START_MS, 'ak_bobs');
  const page = await store.listKeys('ann', { limit: 2, order: 'desc' });
  expect(page?.map((r) => r.key)).toEqual(['ak_soon', 'ak_one']);
  expect((await store.listKeys('ann'))?.map((r) => r.key)).toEqual(['ak_soon', 'ak_one', 'ak_old']);
  expect(await store.createKey(pair('ak_capped'), 3)).toBe(false);
  // A verified record kept, and one refused: the hash it is over is not the pair's.
  expect(await store.keepVerifiedRecord('ak_one', OTHER_HASH, 'v1.record')).toBe(true);
  expect(await store.keepVerifiedRecord('ak_one', HASH, 'v1.record')).toBe(false);

  // ak_soon's end comes: the count reads its hash, and takes it out of the active set.
  clock.ms += 2 * HOUR_MS;
  expect(await store.countActiveKeys('ann')).toBe(2);
  await store.revokeKey('ak_old', iso(clock.ms));
  await expect(
    store.revokeKey('ak_one', iso(clock.ms), { keepLastActive: true }),
  ).rejects.toMatchObject({ code: 'conflict' });

  // Past the retention of ak_soon and ak_old: the next change deletes them.
  clock.ms += 31 * DAY_MS;
  expect(await store.createKey(pair('ak_two', { createdAt: iso(clock.ms) }), 3)).toBe(true);
  expect((await store.listKeys('ann'))?.map((r) => r.key)).toEqual(['ak_two', 'ak_one']);
  expect((await store.revokeSubjectKeys('ann', iso(clock.ms))).sort()).toEqual([
    'ak_one',
    'ak_two',
  ]);
  // A roll with an overlap, then one without: the successor under the subject's tag.
  expect(await store.createKey(pair('ak_three', { createdAt: iso(clock.ms) }), 3)).toBe(true);
  const roll = (key: string, successor: string, overlapSec: number) =>
    store.rollKey(
      { key, successor: { key: successor, secretHash: HASH }, at: iso(clock.ms), overlapSec },
      3,
    );
  expect((await roll('ak_three', 'ak_four', 60))?.successor.key).toBe('ak_four');
  expect((await roll('ak_four', 'ak_five', 0))?.rolled.status).toBe('revoked');
  expect(await store.removeUser('ann')).toBe(true);
}

async function runLockoutScript(): Promise<void> {
  const config = parseConfig(
    'lockout: { basic: { keyAddress: { threshold: 2, maxLockSec: 60 } } }',
    'script-keys.yaml',
  ).lockout;
  const lockout = backend.lockout(config);
  const target = (id: string): LockoutTarget => ({
    kind: 'basic',
    id,
    address: '192.0.2.1',
    network: '192.0.2.1',
  });
  for (const outcome of ['failure', 'failure', 'success', 'error'] as const) {
    const decision = await lockout.begin(target(outcome === 'failure' ? 'ak_guess' : outcome));
    if (decision.kind === 'allow') await decision.attempt.settle(outcome);
  }
  expect(await lockout.begin(target('ak_guess'))).toMatchObject({ kind: 'refuse' });
  expect(await lockout.checkAddress('token', '192.0.2.1')).toBeUndefined();
}

async function runBucketScript(): Promise<void> {
  await admin.hset(layout.key('ak_one', 'ann'), 'rate_limit', '5/60');
  await admin.hset(layout.subject('ann'), 'rate_limit', 'soon');
  const policy = { requests: 10, periodSec: 60, burst: 10 };
  const key = { kind: 'key', key: 'ak_one', subject: 'ann' } as const;
  const subject = { kind: 'subject', subject: 'ann' } as const;
  const buckets = backend.buckets({ maxTrackedBuckets: 10 });
  const result = await buckets.take({
    buckets: [
      { bucket: { kind: 'credential', owner: key }, policy, override: key },
      { bucket: { kind: 'subject', subject: 'ann' }, policy, override: subject },
      { bucket: { kind: 'route', route: 'accounts', owner: key }, policy },
    ],
  });
  expect(result.allowed).toBe(true);
  expect(result.malformedOverrides).toEqual([{ key: layout.subject('ann'), value: 'soon' }]);
  const address = { bucket: { kind: 'address', network: '192.0.2.1' }, policy } as const;
  expect((await buckets.take({ buckets: [address] })).allowed).toBe(true);
}

/**
 * A subject's pairs and settings, and a user, in the single-slot layout: touching the subject
 * moves them (and a revocation a writer left there as a fragment merges into the moved pair).
 */
async function runMoveScripts(): Promise<void> {
  const fields = {
    secret_hash: HASH,
    subject: 'ole',
    status: 'active',
    created_at: iso(clock.ms - HOUR_MS),
  };
  await admin.hset(single.key('ak_ole1'), fields);
  await admin.hset(single.key('ak_ole2'), fields);
  for (const id of ['ak_ole1', 'ak_ole2'])
    await admin.zadd(single.subjectPairs('ole'), clock.ms - HOUR_MS, id);
  await admin.sadd(single.subjectActive('ole'), 'ak_ole1', 'ak_ole2');
  await admin.hset(single.subject('ole'), 'rate_limit', '5/60');
  expect((await backend.credentials.listKeys('ole'))?.map((r) => r.key).sort()).toEqual([
    'ak_ole1',
    'ak_ole2',
  ]);
  await admin.hset(single.key('ak_ole2'), { status: 'revoked', revoked_at: iso(clock.ms) });
  await admin.zadd(single.subjectPairs('ole'), clock.ms - HOUR_MS, 'ak_ole2');
  expect(await backend.credentials.countActiveKeys('ole')).toBe(1);
  // A user still in the single slot: its password changed and the user removed there, its
  // portal sessions (in today's layout, another slot) ended by a script of their own.
  await admin.hset(single.user('ole'), { password_hash: HASH, subject: 'ole' });
  expect(await backend.credentials.setUserPassword('ole', OTHER_HASH)).toBe(true);
  expect(await backend.credentials.removeUser('ole')).toBe(true);
}

describe('the Redis backend’s scripts', () => {
  it('run every script, along each of its paths, touching no key they were not given in KEYS', async () => {
    await runCredentialScripts();
    await runLockoutScript();
    await runBucketScript();
    await runMoveScripts();

    const ran = await audit.ran();
    expect(ALL_SCRIPTS.filter((script) => !ran.has(script.sha)).map((s) => s.name)).toEqual([]);
    const names = new Map(ALL_SCRIPTS.map((script) => [script.sha, script.name]));
    const undeclared = (await audit.undeclared()).map(({ sha, command, undeclared }) => ({
      script: names.get(sha) ?? sha,
      command: command.join(' '),
      undeclared,
    }));
    expect(undeclared).toEqual([]);
  });
});

describe('the watch on scripts’ keys', () => {
  it('sees a key a script forms itself, in the slot of the keys it was given', async () => {
    // What the pair scripts did before they declared each hash they read: `KP .. id`.
    const formed = scriptFromSource(
      'formed',
      `redis.call('SET', KEY.given, 1) return redis.call('GET', ARG.prefix .. 'formed')`,
      { keys: ['given'], args: ['prefix'] },
    );
    const client = createRedisClient(watchedConfig());
    const connection = watchRedisConnection(client, {
      address: 'test',
      secrets: [],
      settleWithinMs: 1_000,
    });
    try {
      const runner = createScriptRunner(client, { timeoutMs: 10_000, connection });
      await runner.run(formed, { given: `${prefix}given` }, { prefix });
      expect(
        (await audit.undeclared())
          .filter(({ sha }) => sha === formed.sha)
          .map(({ command, undeclared }) => [command, undeclared]),
      ).toEqual([[['GET', `${prefix}formed`], [`${prefix}formed`]]]);
    } finally {
      client.disconnect();
    }
  });
});

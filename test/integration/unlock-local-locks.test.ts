import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { unlockMessage } from '../../src/backends/redis/revocation-message.js';
import type { Backend } from '../../src/backends/backend.js';
import type { Revocation, SubscriptionStart } from '../../src/credentials/credential-store.js';
import { countersOf, type Lockout, type LockoutTarget } from '../../src/protection/lockout.js';
import { deferred, type Deferred } from '../support/deferred.js';
import { config } from '../support/lockout-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The locks a gateway process remembers (local-locks.ts) against the revocation channel, on a
// redis-server of this file's own (a test drops every subscriber on it): an unlock heard there
// is forgotten at once, and after a lost subscription every lock is, since an unlock may have
// been published while none stood.

const prefix = uniquePrefix('unlock-local');
const layout = redisLayout(prefix);
const targetOf = (id: string): LockoutTarget => ({
  kind: 'basic',
  id,
  address: '10.1.0.1',
  network: '10.1.0.1',
});

let server: TestRedis;
let redis: Redis;
let backend: Backend;
let lockout: Lockout;
/** Each revocation heard, and each subscription start, resolved in turn. */
let revoked: Deferred<Revocation>;
let started: Deferred<SubscriptionStart>;

beforeAll(async () => {
  server = await startLocalRedis();
  redis = new Redis(server.url);
  backend = createRedisBackend(redisConfig(server.url, prefix));
  lockout = backend.lockout(config());
  revoked = deferred();
  started = deferred();
  backend.credentials.subscribe(
    (revocation) => revoked.resolve(revocation),
    (start) => started.resolve(start),
  );
  expect(await started.promise).toBe('first');
});

afterAll(async () => {
  await backend?.credentials.close();
  redis?.disconnect();
  await server?.stop();
});

/** Locks the target's (key, address) counter in Redis, and has the process remember it. */
async function lockHere(target: LockoutTarget): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    const decision = await lockout.begin(target);
    if (decision.kind !== 'allow') throw new Error('refused before the threshold');
    await decision.attempt.settle('failure');
  }
  expect(await lockout.begin(target)).toMatchObject({ kind: 'refuse', locked: true });
  // Deleted by hand: from here only this process's memory refuses.
  await redis.del(...countersOf(target).map(layout.lockoutCounter));
  expect(await lockout.begin(target)).toMatchObject({ kind: 'refuse', locked: true });
}

describe('the locks a process remembers', () => {
  it('forgets a key whose unlock is heard on the revocation channel', async () => {
    const target = targetOf('ak_heard');
    await lockHere(target);
    revoked = deferred();
    await redis.publish(layout.channel, unlockMessage({ kind: 'key', key: target.id }));
    // Heard in order on one connection: once this has arrived, the unlock has too.
    await redis.publish(layout.channel, 'key:ak_marker');
    expect(await revoked.promise).toEqual({ kind: 'key', key: 'ak_marker' });
    const decision = await lockout.begin(target);
    expect(decision.kind).toBe('allow');
    if (decision.kind === 'allow') await decision.attempt.settle('success');
  });

  it('forgets every lock once the subscription stands again after a loss', async () => {
    const target = targetOf('ak_missed');
    await lockHere(target);
    started = deferred();
    await redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect(await started.promise).toBe('again');
    expect((await lockout.begin(target)).kind).toBe('allow');
  });
});

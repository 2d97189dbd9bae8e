import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createRedisClient, watchRedisConnection } from '../../src/backends/redis/client.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisLockout } from '../../src/backends/redis/lockout-store.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { createScriptRunner } from '../../src/backends/redis/run-script.js';
import type { Lockout } from '../../src/protection/lockout.js';
import { basic, config, failTimes } from '../support/lockout-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';

// A flood of random key ids from a network the lockout refuses must leave nothing in Redis:
// each refused attempt used to leave its two id counters behind, empty, for windowSec.

const redisUrl = inject('redisUrl');
const FLOOD = 100_000;
/** Attempts in flight at once: enough to keep Redis busy, few enough for a loaded machine. */
const PARALLEL = 200;

let admin: Redis;
const closers: (() => Promise<void> | void)[] = [];

beforeAll(() => {
  admin = new Redis(redisUrl);
});
afterAll(async () => {
  for (const close of closers) await close();
  admin.disconnect();
});

const randomId = () => `ak_${randomBytes(18).toString('base64url')}`;

/** Room for a loaded machine: a command timeout here would read as an outage. */
const settingsFor = (prefix: string) => ({
  ...redisConfig(redisUrl, prefix),
  commandTimeoutMs: 10_000,
});

async function keysUnder(prefix: string): Promise<number> {
  return (await admin.keys(`${prefix}*`)).length;
}

/** `count` attempts with fresh random ids from `network`, each expected to be refused. */
async function flood(lockout: Lockout, network: string, count: number): Promise<void> {
  for (let done = 0; done < count; done += PARALLEL) {
    const decisions = await Promise.all(
      Array.from({ length: Math.min(PARALLEL, count - done) }, () =>
        lockout.begin(basic(randomId(), network)),
      ),
    );
    const allowed = decisions.filter((d) => d.kind !== 'refuse').length;
    expect(allowed).toBe(0);
  }
}

describe('a flood of random key ids from a refused network', () => {
  it(`adds no Redis key for ${FLOOD} ids from a locked network, each asked of Redis`, async () => {
    // The store itself, without the process's memory of locks: what each process of a fleet
    // (and each worker) asks before it has seen the lock.
    const prefix = uniquePrefix('flood');
    const settings = settingsFor(prefix);
    const client = createRedisClient(settings);
    closers.push(() => client.disconnect());
    const connection = watchRedisConnection(client, {
      address: 'test',
      secrets: [],
      settleWithinMs: 1_000,
    });
    const runner = createScriptRunner(client, { timeoutMs: 10_000, connection });
    // A lock longer than the flood takes on a loaded machine.
    const lockout = createRedisLockout(
      config({ initialLockSec: 3600 }),
      runner,
      redisLayout(prefix),
    );
    // The address threshold is 6: one failure each of six ids locks the network.
    for (let i = 0; i < 6; i += 1) await failTimes(lockout, basic(`ak_seed${i}`, '10.9.0.1'), 1);
    expect(await lockout.begin(basic(randomId(), '10.9.0.1'))).toMatchObject({
      kind: 'refuse',
      scope: 'basic_address',
      locked: true,
    });
    const before = await keysUnder(prefix);
    await flood(lockout, '10.9.0.1', FLOOD);
    expect(await keysUnder(prefix)).toBe(before);
  }, 300_000);

  it('adds no Redis key for ids refused because an attempt from the network is in flight', async () => {
    // After a lock ends, the first attempt that goes ahead holds the counter at its threshold
    // until it settles: every other attempt is refused by Redis (not remembered in process,
    // since the attempt may succeed), each with a script run.
    const prefix = uniquePrefix('flood');
    const backend: Backend = createRedisBackend(settingsFor(prefix));
    closers.push(() => backend.credentials.close());
    const lockout = backend.lockout(config());
    for (let i = 0; i < 5; i += 1) await failTimes(lockout, basic(`ak_seed${i}`, '10.9.0.2'), 1);
    const held = await lockout.begin(basic('ak_held', '10.9.0.2'));
    expect(held.kind).toBe('allow');
    expect(await lockout.begin(basic(randomId(), '10.9.0.2'))).toMatchObject({
      kind: 'refuse',
      scope: 'basic_address',
      locked: false,
    });
    const before = await keysUnder(prefix);
    await flood(lockout, '10.9.0.2', 5_000);
    expect(await keysUnder(prefix)).toBe(before);
    if (held.kind === 'allow') await held.attempt.settle('failure');
  }, 120_000);
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import {
  basic,
  config,
  failTimes,
  lockoutContract,
  type LockoutImplementation,
} from '../support/lockout-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';

// One contract for both lockouts (support/lockout-contract.ts): the in-process one (memory
// store) and the Redis script (shared by every instance); then what only Redis does.

const redisUrl = inject('redisUrl');

let admin: Redis;
const backends: Backend[] = [];
const prefixes: string[] = [];

beforeAll(() => {
  admin = new Redis(redisUrl);
});
afterAll(async () => {
  await Promise.all(backends.map((backend) => backend.credentials.close()));
  admin.disconnect();
});

const IMPLEMENTATIONS: LockoutImplementation[] = [
  { name: 'in process (memory backend)', make: (c) => createMemoryBackend().lockout(c) },
  {
    name: 'Redis backend',
    make(c) {
      // Each lockout its own prefix, so tests never share counters.
      const prefix = uniquePrefix('lockout');
      prefixes.push(prefix);
      const backend = createRedisBackend(redisConfig(redisUrl, prefix));
      backends.push(backend);
      return backend.lockout(c);
    },
  },
];

for (const impl of IMPLEMENTATIONS) lockoutContract(impl);

describe('lockout in Redis', () => {
  it('keeps every counter under the key prefix, the address counter under its network’s tag and the others under the key’s, each with an expiry', async () => {
    const lockout = IMPLEMENTATIONS[1]?.make(config());
    if (lockout === undefined) throw new Error('no Redis implementation');
    const prefix = prefixes.at(-1) ?? '';
    await failTimes(lockout, basic('ak_keys', '2001:db8::1'), 3);
    const keys = (await admin.keys(`${prefix}*`)).sort();
    const layout = redisLayout(prefix);
    expect(keys).toEqual(
      [
        layout.lockoutCounter({ scope: 'basic_address', id: '', network: '2001:db8::1' }),
        layout.lockoutCounter({
          scope: 'basic_key_address',
          id: 'ak_keys',
          network: '2001:db8::1',
        }),
        layout.lockoutCounter({ scope: 'basic_key', id: 'ak_keys', network: '' }),
      ].sort(),
    );
    const [network, id] = [layout.tagOf('2001:db8::1'), layout.tagOf('ak_keys')];
    expect(keys).toEqual(
      [
        `{${network}}:lockout:basic:address:2001:db8::1`,
        `{${id}}:lockout:basic:key-address:ak_keys:2001:db8::1`,
        `{${id}}:lockout:basic:key:ak_keys`,
      ]
        .map((k) => prefix + k)
        .sort(),
    );
    for (const key of keys) {
      const ttl = await admin.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(660_000);
    }
  });

  it('lets a process that saw a refusal for an attempt in flight admit the next attempt once that one succeeded', async () => {
    // Issue 13: two gateways on one Redis; on one, a client behind a NAT is refused because
    // another attempt from the same address is in flight. That attempt succeeds; the next
    // attempt from the address must not be refused by this process for the whole Retry-After.
    // The Redis backend's lockout remembers locks in process (local-locks.ts), as a gateway's.
    const gateway = IMPLEMENTATIONS[1]?.make(config());
    if (gateway === undefined) throw new Error('no Redis implementation');
    const target = basic('ak_nat', '10.0.10.1');
    await failTimes(gateway, target, 2);
    const running = await gateway.begin(target);
    expect(running.kind).toBe('allow');
    expect(await gateway.begin(target)).toMatchObject({ kind: 'refuse', locked: false });
    if (running.kind === 'allow') await running.attempt.settle('success');
    expect((await gateway.begin(target)).kind).toBe('allow');
  });
});

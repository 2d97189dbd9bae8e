import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createBasicAuthenticator,
  type BasicAuthenticatorOptions,
} from '../../../src/auth/basic-authenticator.js';
import type { CredentialStore, KeyRecord } from '../../../src/credentials/credential-store.js';
import { DENIED } from '../../../src/auth/denial.js';
import { createMemoryStore } from '../../../src/backends/memory/credential-store.js';
import { createSecretHasher } from '../../../src/credentials/secret-hasher.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { countingHasher, type CountingHasher } from '../../support/counting-hasher.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { SILENT_LOCKOUT_EVENTS } from '../../../src/protection/guard-attempt.js';
import type { LockoutTarget } from '../../../src/protection/lockout.js';
import { createMemoryLockout } from '../../../src/backends/memory/lockout-store.js';

/** The credentials as a client sends them, which is what the cache is keyed by. */
function encoded(key: string, secret: string): string {
  return Buffer.from(`${key}:${secret}`).toString('base64');
}

const hasher = createSecretHasher(4);
const KEY = 'ak_aliceAAAAAAAAAAAAAAAAAAAA';
const SECRET = 'aliceSecret0123456789aliceSecret0123456789';
const LONG_KEY = 'ak_longAAAAAAAAAAAAAAAAAAAAA';
const SEVENTY_TWO = 'A'.repeat(72);
/** A self-describing id of subject erin (identity/key-id.ts), and one character of it changed. */
const TAGGED = 'ak_7cbcc_7FqR0cX1mZ9pLw2sTn4vYb8d3oDf3t';
const FORGED = `${TAGGED.slice(0, -1)}1`;
const ERIN_SECRET = 'erinSecret0123456789erinSecret0123456789';

let records: KeyRecord[];
let dummyHash: string;

beforeAll(async () => {
  dummyHash = await hasher.hash(randomBytes(32).toString('base64'));
  const erinHash = await hasher.hash(ERIN_SECRET);
  records = [
    {
      key: KEY,
      subject: 'alice',
      secretHash: await hasher.hash(SECRET),
      label: 'laptop',
      status: 'active',
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
    },
    {
      key: 'ak_bobBBBBBBBBBBBBBBBBBBBBBB',
      subject: 'bob',
      secretHash: await hasher.hash('bobSecret'),
      label: '',
      status: 'active',
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
    },
    {
      key: 'ak_alice2AAAAAAAAAAAAAAAAAAA',
      subject: 'alice',
      secretHash: await hasher.hash('aliceSecond'),
      label: '',
      status: 'active',
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
    },
    {
      key: 'ak_revokedRRRRRRRRRRRRRRRRRR',
      subject: 'carol',
      secretHash: await hasher.hash('carolSecret'),
      label: '',
      status: 'revoked',
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
      revokedAt: '2030-01-02T00:00:00.000Z',
    },
    // Both stored, as a careless writer might: the forged one must still never be read.
    ...[TAGGED, FORGED].map((key) => ({
      key,
      subject: 'erin',
      secretHash: erinHash,
      label: '',
      status: 'active' as const,
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
    })),
    {
      key: LONG_KEY,
      subject: 'dave',
      secretHash: await hasher.hash(SEVENTY_TWO),
      label: '',
      status: 'active',
      createdAt: '2030-01-01T00:00:00.000Z',
      scopes: [],
    },
  ];
});

/** A real memory store that counts its lookups (and can be told to fail, like Redis down). */
function countingStore(): CredentialStore & { lookups: () => number; down: (on: boolean) => void } {
  const store = createMemoryStore({ keys: records });
  let lookups = 0;
  let down = false;
  return {
    ...store,
    getKey(key) {
      lookups += 1;
      if (down) return Promise.reject(new GatewayError('credential_store_unavailable'));
      return store.getKey(key);
    },
    lookups: () => lookups,
    down: (on) => {
      down = on;
    },
  };
}

function setup(options: Partial<BasicAuthenticatorOptions> = {}) {
  const store = countingStore();
  const counted = countingHasher(hasher);
  const basic = createBasicAuthenticator({
    store,
    hasher: counted,
    dummyHash,
    cacheTtlSec: 60,
    cacheMaxEntries: 100,
    maxConcurrentHashes: 4,
    maxQueuedHashes: 16,
    ...options,
  });
  return { basic, store, hasher: counted };
}

describe('createBasicAuthenticator: verify', () => {
  it('returns the identity for the right key and secret', async () => {
    const { basic } = setup();
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
  });

  it('returns the invalid_credentials denial for a wrong secret', async () => {
    const { basic } = setup();
    await expect(basic.verify(KEY, `${SECRET}x`)).resolves.toBe(DENIED.invalid_credentials);
  });

  it('returns the invalid_credentials denial for an unknown key after one compare against the dummy hash', async () => {
    const { basic, hasher: counted } = setup();
    await expect(basic.verify('ak_unknownUUUUUUUUUUUUUUUUUU', SECRET)).resolves.toBe(
      DENIED.invalid_credentials,
    );
    expect(counted.compares()).toEqual([{ secret: SECRET, hash: dummyHash }]);
  });

  it('returns the invalid_credentials denial for a revoked key, even with its right secret, after one compare', async () => {
    const { basic, hasher: counted } = setup();
    await expect(basic.verify('ak_revokedRRRRRRRRRRRRRRRRRR', 'carolSecret')).resolves.toBe(
      DENIED.invalid_credentials,
    );
    expect(counted.compares()).toHaveLength(1);
  });

  it('returns the invalid_credentials denial once a key is revoked in the store', async () => {
    const { basic, store } = setup({ cacheTtlSec: 0 });
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
    await store.revokeKey(KEY, '2030-01-03T00:00:00.000Z');
    await expect(basic.verify(KEY, SECRET)).resolves.toBe(DENIED.invalid_credentials);
  });

  it('accepts a secret of exactly 72 bytes', async () => {
    const { basic } = setup();
    await expect(basic.verify(LONG_KEY, SEVENTY_TWO)).resolves.toEqual({
      subject: 'dave',
      method: 'basic',
      key: LONG_KEY,
      scopes: [],
    });
  });

  it('returns the invalid_credentials denial for a secret over 72 bytes whose first 72 bytes match, without hashing', async () => {
    const { basic, hasher: counted, store } = setup();
    // bcrypt alone would accept it: that is the bypass being guarded against.
    const records0 = await store.getKey(LONG_KEY);
    expect(await hasher.verify(`${SEVENTY_TWO}X`, records0?.secretHash ?? '')).toBe(true);
    await expect(basic.verify(LONG_KEY, `${SEVENTY_TWO}X`)).resolves.toBe(
      DENIED.invalid_credentials,
    );
    expect(counted.compares()).toEqual([]);
  });

  it('counts bytes, not characters, against the 72-byte limit', async () => {
    const { basic, hasher: counted } = setup();
    await expect(basic.verify(KEY, '£'.repeat(37))).resolves.toBe(DENIED.invalid_credentials);
    expect(counted.compares()).toEqual([]);
    await expect(basic.verify(KEY, '£'.repeat(36))).resolves.toBe(DENIED.invalid_credentials);
    expect(counted.compares()).toHaveLength(1);
  });

  it('returns the invalid_credentials denial for an empty secret or key without a store lookup', async () => {
    const { basic, store } = setup();
    await expect(basic.verify(KEY, '')).resolves.toBe(DENIED.invalid_credentials);
    await expect(basic.verify('', SECRET)).resolves.toBe(DENIED.invalid_credentials);
    expect(store.lookups()).toBe(0);
  });

  it('returns the invalid_credentials denial for a key longer than 128 characters without a store lookup', async () => {
    const { basic, store } = setup();
    await expect(basic.verify('k'.repeat(129), SECRET)).resolves.toBe(DENIED.invalid_credentials);
    expect(store.lookups()).toBe(0);
  });

  it('verifies a self-describing key id like any other: one store read, one compare', async () => {
    const { basic, store, hasher: counted } = setup();
    await expect(basic.verify(TAGGED, ERIN_SECRET)).resolves.toMatchObject({ subject: 'erin' });
    expect([store.lookups(), counted.compares().length]).toEqual([1, 1]);
  });

  it('refuses a key id whose checksum fails with the invalid_credentials denial, reading no store and running no bcrypt', async () => {
    const { basic, store, hasher: counted } = setup();
    await expect(basic.verify(FORGED, ERIN_SECRET)).resolves.toBe(DENIED.invalid_credentials);
    expect([store.lookups(), counted.compares().length]).toEqual([0, 0]);
  });

  it('does not let one key’s secret open another key', async () => {
    const { basic } = setup();
    await expect(basic.verify('ak_bobBBBBBBBBBBBBBBBBBBBBBB', SECRET)).resolves.toBe(
      DENIED.invalid_credentials,
    );
  });
});

describe('createBasicAuthenticator: cache', () => {
  it('returns the identity from cached() after a verify, without touching the store', async () => {
    const { basic, store, hasher: counted } = setup();
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
    await basic.verify(KEY, SECRET);
    const lookups = store.lookups();
    const compares = counted.compares().length;
    expect(basic.cached(encoded(KEY, SECRET))).toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
    expect([store.lookups(), counted.compares().length]).toEqual([lookups, compares]);
  });

  it('answers a connection’s repeated pair from the cache, and not once the pair is evicted', async () => {
    const { basic } = setup();
    const connection = {};
    await basic.verify(KEY, SECRET);
    const alice = { subject: 'alice', method: 'basic', key: KEY, scopes: [] };
    expect(basic.cached(encoded(KEY, SECRET), connection)).toEqual(alice);
    expect(basic.cached(encoded(KEY, SECRET), connection)).toEqual(alice);
    basic.evictKey(KEY);
    expect(basic.cached(encoded(KEY, SECRET), connection)).toBeUndefined();
  });

  it('misses the cache for another secret sent on the connection of a cached pair', async () => {
    const { basic } = setup();
    const connection = {};
    await basic.verify(KEY, SECRET);
    expect(basic.cached(encoded(KEY, SECRET), connection)).toBeDefined();
    expect(basic.cached(encoded(KEY, `${SECRET}x`), connection)).toBeUndefined();
    expect(basic.cached(encoded(KEY, SECRET), connection)).toBeDefined();
  });

  it('misses the cache for any other secret of a cached key', async () => {
    const { basic } = setup();
    await basic.verify(KEY, SECRET);
    expect(basic.cached(encoded(KEY, `${SECRET}x`))).toBeUndefined();
    expect(basic.cached(encoded(KEY, SECRET.slice(0, -1)))).toBeUndefined();
  });

  it('does not cache a denial', async () => {
    const { basic } = setup();
    await basic.verify(KEY, 'wrong');
    expect(basic.cached(encoded(KEY, 'wrong'))).toBeUndefined();
  });

  it('caches nothing when the TTL is 0', async () => {
    const { basic } = setup({ cacheTtlSec: 0 });
    await basic.verify(KEY, SECRET);
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
  });

  it('keeps no more than cacheMaxEntries pairs', async () => {
    const { basic } = setup({ cacheMaxEntries: 1 });
    await basic.verify(KEY, SECRET);
    await basic.verify('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret');
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
    expect(basic.cached(encoded('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret'))).toEqual({
      subject: 'bob',
      method: 'basic',
      key: 'ak_bobBBBBBBBBBBBBBBBBBBBBBB',
      scopes: [],
    });
  });

  it('runs bcrypt and the store lookup once for concurrent identical verifies', async () => {
    const { basic, store, hasher: counted } = setup();
    const results = await Promise.all(Array.from({ length: 5 }, () => basic.verify(KEY, SECRET)));
    expect(results).toEqual(
      Array(5).fill({ subject: 'alice', method: 'basic', key: KEY, scopes: [] }),
    );
    expect([store.lookups(), counted.compares().length]).toEqual([1, 1]);
  });

  it('runs bcrypt again for a pair whose earlier check has settled', async () => {
    const { basic, hasher: counted } = setup({ cacheTtlSec: 0 });
    await basic.verify(KEY, SECRET);
    await basic.verify(KEY, SECRET);
    expect(counted.compares()).toHaveLength(2);
  });

  it('forgets one key on evictKey and keeps the others', async () => {
    const { basic } = setup();
    await basic.verify(KEY, SECRET);
    await basic.verify('ak_alice2AAAAAAAAAAAAAAAAAAA', 'aliceSecond');
    basic.evictKey(KEY);
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
    expect(basic.cached(encoded('ak_alice2AAAAAAAAAAAAAAAAAAA', 'aliceSecond'))).toEqual({
      subject: 'alice',
      method: 'basic',
      key: 'ak_alice2AAAAAAAAAAAAAAAAAAA',
      scopes: [],
    });
  });

  it('checks the store again after evictKey', async () => {
    const { basic, store } = setup();
    await basic.verify(KEY, SECRET);
    await store.revokeKey(KEY, '2030-01-03T00:00:00.000Z');
    basic.evictKey(KEY);
    await expect(basic.verify(KEY, SECRET)).resolves.toBe(DENIED.invalid_credentials);
  });

  it('forgets every key of a subject on evictSubject', async () => {
    const { basic } = setup();
    await basic.verify(KEY, SECRET);
    await basic.verify('ak_alice2AAAAAAAAAAAAAAAAAAA', 'aliceSecond');
    await basic.verify('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret');
    basic.evictSubject('alice');
    expect([
      basic.cached(encoded(KEY, SECRET)),
      basic.cached(encoded('ak_alice2AAAAAAAAAAAAAAAAAAA', 'aliceSecond')),
      basic.cached(encoded('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret')),
    ]).toEqual([
      undefined,
      undefined,
      { subject: 'bob', method: 'basic', key: 'ak_bobBBBBBBBBBBBBBBBBBBBBBB', scopes: [] },
    ]);
  });

  it('forgets everything on flush', async () => {
    const { basic } = setup();
    await basic.verify(KEY, SECRET);
    await basic.verify('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret');
    basic.flush();
    expect([
      basic.cached(encoded(KEY, SECRET)),
      basic.cached(encoded('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret')),
    ]).toEqual([undefined, undefined]);
  });
});

/** Resolves once `count` bcrypt compares have started (they may be held). */
async function untilCompares(counted: CountingHasher, count: number) {
  while (counted.compares().length < count) await new Promise((r) => setImmediate(r));
}

type BasicAuthenticatorUnderTest = ReturnType<typeof setup>['basic'];

// Each revocation message the store can deliver, as it reaches the authenticator.
const EVICTIONS: [string, (basic: BasicAuthenticatorUnderTest) => void][] = [
  ['evictKey', (basic) => basic.evictKey(KEY)],
  ['evictSubject', (basic) => basic.evictSubject('alice')],
  ['flush', (basic) => basic.flush()],
];

describe('createBasicAuthenticator: a revocation while bcrypt runs', () => {
  it.each(EVICTIONS)('does not cache a pair whose check began before %s', async (_name, evict) => {
    const { basic, hasher: counted } = setup();
    const release = counted.hold();
    const checking = basic.verify(KEY, SECRET);
    await untilCompares(counted, 1);
    evict(basic);
    release();
    // The request itself began before the revocation, so its answer stands.
    await expect(checking).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
  });

  it.each(EVICTIONS)(
    'reads the store again for a verify that arrives after %s, instead of joining the check under way',
    async (_name, evict) => {
      const { basic, store, hasher: counted } = setup();
      const release = counted.hold();
      const before = basic.verify(KEY, SECRET);
      await untilCompares(counted, 1);
      await store.revokeKey(KEY, '2030-01-03T00:00:00.000Z');
      evict(basic);
      const after = basic.verify(KEY, SECRET);
      release();
      await expect(after).resolves.toBe(DENIED.invalid_credentials);
      expect([store.lookups(), counted.compares().length]).toEqual([2, 2]);
      await before;
      expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
    },
  );

  it('caches a pair whose check began after the last revocation', async () => {
    const { basic } = setup();
    basic.evictKey(KEY);
    await basic.verify(KEY, SECRET);
    expect(basic.cached(encoded(KEY, SECRET))).toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
  });
});

describe('createBasicAuthenticator: failures', () => {
  it('rejects with overloaded (503, Retry-After 1) when the bcrypt queue is full', async () => {
    const { basic, hasher: counted } = setup({ maxConcurrentHashes: 1, maxQueuedHashes: 1 });
    const release = counted.hold();
    const running = basic.verify(KEY, SECRET);
    const queued = basic.verify(KEY, 'second-guess');
    // Wait until the first compare has started (it holds the only slot).
    while (counted.compares().length === 0) await new Promise((r) => setImmediate(r));
    const refused = basic.verify(KEY, 'third-guess');
    await expect(refused).rejects.toBeInstanceOf(GatewayError);
    await refused.catch((error: unknown) => {
      const e = error as GatewayError;
      expect([e.code, e.status, e.retryAfterSec]).toEqual(['overloaded', 503, 1]);
    });
    release();
    await expect(running).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
    await expect(queued).resolves.toBe(DENIED.invalid_credentials);
  });

  it('passes a store outage on as credential_store_unavailable, never as a denial', async () => {
    const { basic, store } = setup();
    store.down(true);
    const error = await basic.verify(KEY, SECRET).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect([(error as GatewayError).code, (error as GatewayError).status]).toEqual([
      'credential_store_unavailable',
      503,
    ]);
  });

  it('verifies again once the store is back', async () => {
    const { basic, store } = setup();
    store.down(true);
    await expect(basic.verify(KEY, SECRET)).rejects.toThrow(GatewayError);
    store.down(false);
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual({
      subject: 'alice',
      method: 'basic',
      key: KEY,
      scopes: [],
    });
  });
});

describe('createBasicAuthenticator: pairs cached before a flush', () => {
  const ALICE = { subject: 'alice', method: 'basic', key: KEY, scopes: [] };
  const unavailable = (promise: Promise<unknown>) =>
    expect(promise).rejects.toMatchObject({ code: 'credential_store_unavailable' });

  it('checks such a pair with the store, and serves it as cached while the store cannot answer', async () => {
    const { basic, store } = setup();
    await basic.verify(KEY, SECRET);
    basic.flush();
    expect(basic.cached(encoded(KEY, SECRET))).toBeUndefined();
    store.down(true);
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(ALICE);
    // A pair never verified still gets the 503.
    await unavailable(basic.verify('ak_bobBBBBBBBBBBBBBBBBBBBBBB', 'bobSecret'));
  });

  it('keeps it through further flushes before the store answers', async () => {
    const { basic, store } = setup();
    await basic.verify(KEY, SECRET);
    basic.flush();
    basic.flush();
    store.down(true);
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(ALICE);
  });

  it('never serves it once a revocation named it, nor once the store refused it', async () => {
    for (const evict of EVICTIONS.filter(([name]) => name !== 'flush').map(([, e]) => e)) {
      const { basic, store } = setup();
      await basic.verify(KEY, SECRET);
      basic.flush();
      evict(basic);
      store.down(true);
      await unavailable(basic.verify(KEY, SECRET));
    }
    const { basic, store } = setup();
    await basic.verify(KEY, SECRET);
    basic.flush();
    expect(await basic.verify(KEY, 'wrong')).toBe(DENIED.invalid_credentials);
    await store.revokeKey(KEY, '2030-01-03T00:00:00.000Z');
    expect(await basic.verify(KEY, SECRET)).toBe(DENIED.invalid_credentials);
    store.down(true);
    await unavailable(basic.verify(KEY, SECRET));
  });
});

describe('createBasicAuthenticator: lockout', () => {
  const lockoutConfig = parseConfig(
    'lockout:\n  initialLockSec: 30\n  basic:\n    keyAddress:\n      threshold: 2\n',
    'lockout.yaml',
  ).lockout;
  const from = (address: string) => ({ clientAddress: () => ({ address, network: address }) });

  function withLockout() {
    const failed: string[] = [];
    const events = {
      ...SILENT_LOCKOUT_EVENTS,
      failed: (target: LockoutTarget, reason: string) =>
        failed.push(`${target.address} ${target.id} ${reason}`),
    };
    return {
      ...setup({ lockout: { lockout: createMemoryLockout(lockoutConfig), events } }),
      failed,
    };
  }

  it('refuses the right secret with 429 once the pair is locked from that address, reading and comparing nothing', async () => {
    const { basic, store, hasher: counted } = withLockout();
    for (const secret of ['wrong-1', 'wrong-2'])
      await expect(basic.verify(KEY, secret, undefined, from('10.1.1.1'))).resolves.toBe(
        DENIED.invalid_credentials,
      );
    const [lookups, compares] = [store.lookups(), counted.compares().length];
    const error = await basic
      .verify(KEY, SECRET, undefined, from('10.1.1.1'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retryAfterSec: 30 });
    expect([store.lookups(), counted.compares().length]).toEqual([lookups, compares]);
    // From another address the owner still gets in.
    await expect(basic.verify(KEY, SECRET, undefined, from('10.1.1.2'))).resolves.toMatchObject({
      subject: 'alice',
    });
  });

  it('lets a busy client re-verify its pair on many connections at once: one attempt, not one each', async () => {
    const { basic, hasher: counted } = withLockout();
    const answers = await Promise.allSettled(
      Array.from({ length: 20 }, () => basic.verify(KEY, SECRET, undefined, from('10.1.4.1'))),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 'fulfilled'));
    expect(counted.compares()).toHaveLength(1);
    // A different address is its own attempt, and so is a different secret.
    await expect(basic.verify(KEY, SECRET, undefined, from('10.1.4.2'))).resolves.toMatchObject({
      subject: 'alice',
    });
  });

  it('reports each failure with the address, the key as sent and the reason', async () => {
    const { basic, failed } = withLockout();
    await basic.verify('ak_unknown', 'wrong', undefined, from('10.1.2.1'));
    await basic.verify(KEY, '', undefined, from('10.1.2.1'));
    expect(failed).toEqual([
      '10.1.2.1 ak_unknown invalid_credentials',
      `10.1.2.1 ${KEY} unusable_credentials`,
    ]);
  });

  it('reports a key id whose checksum fails as unusable credentials, without counting it towards a lock', async () => {
    const { basic, failed } = withLockout();
    // Three, past the (key, address) threshold of 2: a counted key would get 429 at the third.
    for (let i = 0; i < 3; i += 1)
      await expect(basic.verify(FORGED, 'wrong', undefined, from('10.1.5.1'))).resolves.toBe(
        DENIED.invalid_credentials,
      );
    expect(failed).toEqual(Array(3).fill(`10.1.5.1 ${FORGED} unusable_credentials`));
  });

  it('does not count a check that ends without a verdict (store down)', async () => {
    const { basic, store } = withLockout();
    store.down(true);
    for (let i = 0; i < 5; i += 1)
      await expect(basic.verify(KEY, 'wrong', undefined, from('10.1.3.1'))).rejects.toMatchObject({
        code: 'credential_store_unavailable',
      });
    store.down(false);
    await expect(basic.verify(KEY, SECRET, undefined, from('10.1.3.1'))).resolves.toMatchObject({
      subject: 'alice',
    });
  });
});

describe('createBasicAuthenticator: expiry', () => {
  const EXPIRING = 'ak_expiringEEEEEEEEEEEEEEEE';
  const ENDS_AT = Date.parse('2031-01-01T00:00:00.000Z');

  async function withExpiringPair(clock: { ms: number }, cacheTtlSec = 60) {
    const store = createMemoryStore({
      keys: [
        {
          key: EXPIRING,
          subject: 'erin',
          secretHash: await hasher.hash('erinSecret'),
          label: '',
          status: 'active',
          createdAt: '2030-01-01T00:00:00.000Z',
          scopes: [],
          expiresAt: new Date(ENDS_AT).toISOString(),
        },
      ],
    });
    const counted = countingHasher(hasher);
    const basic = createBasicAuthenticator({
      store,
      hasher: counted,
      dummyHash,
      cacheTtlSec,
      cacheMaxEntries: 100,
      maxConcurrentHashes: 4,
      maxQueuedHashes: 16,
      now: () => clock.ms,
    });
    return { basic, hasher: counted };
  }

  it('accepts a pair before its expiry', async () => {
    const clock = { ms: ENDS_AT - 1 };
    const { basic } = await withExpiringPair(clock);
    await expect(basic.verify(EXPIRING, 'erinSecret')).resolves.toMatchObject({ subject: 'erin' });
  });

  it('answers an expired pair with its right secret like a revoked one, after one compare against the dummy hash', async () => {
    const clock = { ms: ENDS_AT };
    const { basic, hasher: counted } = await withExpiringPair(clock);
    await expect(basic.verify(EXPIRING, 'erinSecret')).resolves.toBe(DENIED.invalid_credentials);
    expect(counted.compares()).toEqual([{ secret: 'erinSecret', hash: dummyHash }]);
  });

  it('drops a cached pair exactly at its expiry, though the cache TTL is longer', async () => {
    const clock = { ms: ENDS_AT - 10_000 };
    const { basic } = await withExpiringPair(clock, 60);
    await basic.verify(EXPIRING, 'erinSecret');
    clock.ms = ENDS_AT - 1;
    expect(basic.cached(encoded(EXPIRING, 'erinSecret'))).toMatchObject({ subject: 'erin' });
    clock.ms = ENDS_AT;
    expect(basic.cached(encoded(EXPIRING, 'erinSecret'))).toBeUndefined();
    await expect(basic.verify(EXPIRING, 'erinSecret')).resolves.toBe(DENIED.invalid_credentials);
  });
});

describe('createBasicAuthenticator: last use', () => {
  it('notes every successful check, cache hits included, and no failure', async () => {
    const touched: string[] = [];
    const { basic } = setup({
      lastUse: { touch: (key) => touched.push(key), flush: async () => {}, close: async () => {} },
    });
    await basic.verify(KEY, SECRET);
    expect(basic.cached(encoded(KEY, SECRET))).toMatchObject({ key: KEY });
    expect(basic.cached(encoded(KEY, SECRET))).toMatchObject({ key: KEY });
    await basic.verify(KEY, `${SECRET}x`);
    expect(basic.cached(encoded(KEY, `${SECRET}x`))).toBeUndefined();
    expect(touched).toEqual([KEY, KEY, KEY]);
  });
});

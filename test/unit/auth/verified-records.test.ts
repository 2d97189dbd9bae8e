import { randomBytes } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBasicAuthenticator } from '../../../src/auth/basic-authenticator.js';
import { DENIED } from '../../../src/auth/denial.js';
import {
  createVerifiedRecords,
  type RecordEvents,
  type VerifiedRecords,
} from '../../../src/auth/verified-records.js';
import { createMemoryStore } from '../../../src/backends/memory/credential-store.js';
import type { CredentialStore, KeyRecord } from '../../../src/credentials/credential-store.js';
import { generateKeyPair } from '../../../src/credentials/generate-key-pair.js';
import { createSecretHasher } from '../../../src/credentials/secret-hasher.js';
import {
  formatVerifiedRecord,
  newFleetKeyText,
  parseFleetKey,
  type FleetKey,
} from '../../../src/credentials/verified-record.js';
import { countingHasher, type CountingHasher } from '../../support/counting-hasher.js';
import { createMemoryLockout } from '../../../src/backends/memory/lockout-store.js';
import { SILENT_LOCKOUT_EVENTS } from '../../../src/protection/guard-attempt.js';
import type { Lockout } from '../../../src/protection/lockout.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { config as lockoutConfig } from '../../support/lockout-contract.js';

const hasher = createSecretHasher(4);
const START = Date.parse('2026-11-27T12:00:00.000Z');
const HOUR_SEC = 3600;
const alice = generateKeyPair('alice');
const bob = generateKeyPair('bob');
/** A writer's secret of its own form, and one it vouches for (`secret_bits`). */
const WEAK = { key: 'ak_weakWWWWWWWWWWWWWWWWWWWW', secret: 'correct-horse-battery' };
const MARKED = { key: 'ak_markedMMMMMMMMMMMMMMMMMM', secret: 'writer-made-0123456789' };

let dummyHash: string;
let pairs: KeyRecord[];

beforeAll(async () => {
  dummyHash = await hasher.hash(randomBytes(32).toString('base64'));
  const pair = async (
    owner: { key: string; secret: string },
    subject: string,
    extra: Partial<KeyRecord> = {},
  ): Promise<KeyRecord> => ({
    key: owner.key,
    subject,
    secretHash: await hasher.hash(owner.secret),
    label: '',
    status: 'active',
    createdAt: '2026-01-01T00:00:00.000Z',
    scopes: ['accounts:read'],
    ...extra,
  });
  pairs = [
    await pair(alice, 'alice'),
    await pair(bob, 'bob'),
    await pair(WEAK, 'carol'),
    await pair(MARKED, 'dave', { secretBits: 160 }),
  ];
});

/** What the records told, in order. */
function recordingEvents(): RecordEvents & { readonly seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    checked: (result) => seen.push(`checked:${result}`),
    wrote: (result) => seen.push(`wrote:${result}`),
    fleetKeyUnavailable: () => seen.push('fleet key unavailable'),
  };
}

/** One gateway process: its own cache, bcrypt and records, on the shared store. */
function gateway(
  store: CredentialStore,
  options: {
    now?: () => number;
    events?: RecordEvents;
    fleetKey?: FleetKey;
    lockout?: Lockout;
  } = {},
): {
  verify: (pair: { key: string; secret: string }) => Promise<unknown>;
  hasher: CountingHasher;
  records: VerifiedRecords;
} {
  const counted = countingHasher(hasher);
  const now = options.now ?? (() => START);
  const records = createVerifiedRecords({
    store,
    ttlSec: 6 * HOUR_SEC,
    now,
    events: options.events,
    fleetKey: options.fleetKey,
  });
  const authenticator = createBasicAuthenticator({
    store,
    hasher: counted,
    dummyHash,
    cacheTtlSec: 60,
    cacheMaxEntries: 100,
    maxConcurrentHashes: 4,
    maxQueuedHashes: 64,
    now,
    records,
    ...(options.lockout && {
      lockout: { lockout: options.lockout, events: SILENT_LOCKOUT_EVENTS },
    }),
  });
  return {
    verify: ({ key, secret }) => authenticator.verify(key, secret),
    hasher: counted,
    records,
  };
}

/** Resolves once the records written in the background have landed. */
async function settled(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

const identityOf = (key: string, subject: string) => ({
  subject,
  method: 'basic',
  key,
  scopes: ['accounts:read'],
});

describe('verified records: a pair proved once is proved everywhere by its record', () => {
  let store: CredentialStore;

  beforeEach(() => {
    store = createMemoryStore({ keys: pairs }, () => START);
  });

  it('lets a second gateway (its cache empty) accept the pair without a bcrypt run', async () => {
    const events = recordingEvents();
    const first = gateway(store, { events });
    await expect(first.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
    await settled();
    const second = gateway(store, { events });

    await expect(second.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));

    expect(first.hasher.compares()).toHaveLength(1);
    expect(second.hasher.compares()).toHaveLength(0);
    expect(events.seen).toEqual(['checked:absent', 'wrote:written', 'checked:hit']);
  });

  it('gives the scopes the pair has now, not those it had when its record was written', async () => {
    await gateway(store).verify(alice);
    await settled();
    const stored = await store.getKey(alice.key);
    if (stored === undefined) throw new Error('the pair is stored');
    // A copy of the store with the scopes changed, under the same fleet key.
    const changed = createMemoryStore({ keys: [{ ...stored, scopes: ['keys'] }] }, () => START);
    const fleetKey = parseFleetKey(await store.fleetKey());
    const other = gateway(changed, { ...(fleetKey && { fleetKey }) });

    await expect(other.verify(alice)).resolves.toEqual({
      ...identityOf(alice.key, 'alice'),
      scopes: ['keys'],
    });
    expect(other.hasher.compares()).toHaveLength(0);
  });

  it('sends a wrong secret to bcrypt past a live record, and writes nothing for it', async () => {
    const events = recordingEvents();
    await gateway(store).verify(alice);
    await settled();
    const second = gateway(store, { events });

    await expect(second.verify({ ...alice, secret: bob.secret })).resolves.toBe(
      DENIED.invalid_credentials,
    );
    await settled();

    expect(second.hasher.compares()).toHaveLength(1);
    expect(events.seen).toEqual(['checked:refused']);
  });

  it('answers a wrong secret only once its bcrypt compare has ended, a live record or not', async () => {
    await gateway(store).verify(alice);
    await settled();
    const second = gateway(store);
    const release = second.hasher.hold();
    let answered = false;
    const answer = second.verify({ ...alice, secret: bob.secret }).then((outcome) => {
      answered = true;
      return outcome;
    });
    while (second.hasher.compares().length === 0) await settled();
    await settled();

    expect(answered).toBe(false);
    release();
    await expect(answer).resolves.toBe(DENIED.invalid_credentials);
  });

  it("does not let one pair's record prove another pair", async () => {
    await gateway(store).verify(alice);
    await settled();
    const record = (await store.getKey(alice.key))?.verifiedRecord ?? '';
    const bobHash = (await store.getKey(bob.key))?.secretHash ?? '';
    await store.keepVerifiedRecord(bob.key, bobHash, record);
    const second = gateway(store);

    await expect(second.verify({ key: bob.key, secret: alice.secret })).resolves.toBe(
      DENIED.invalid_credentials,
    );
    await expect(second.verify(bob)).resolves.toEqual(identityOf(bob.key, 'bob'));
    expect(second.hasher.compares()).toHaveLength(2);
  });

  it('refuses a record forged without the fleet key, or made over another hash, at bcrypt cost', async () => {
    const fleet = parseFleetKey(await store.fleetKey());
    if (fleet === undefined) throw new Error('the store gives a fleet key');
    const aliceHash = (await store.getKey(alice.key))?.secretHash ?? '';
    const end = START + 3_600_000;
    const forged = `v1.${fleet.id}.${end}.${randomBytes(16).toString('base64url')}`;
    const overOtherHash = formatVerifiedRecord(fleet, { ...alice, secretHash: dummyHash }, end);
    for (const record of [forged, overOtherHash]) {
      await store.keepVerifiedRecord(alice.key, aliceHash, record);
      const events = recordingEvents();
      const fresh = gateway(store, { events });

      await expect(fresh.verify({ ...alice, secret: bob.secret })).resolves.toBe(
        DENIED.invalid_credentials,
      );
      // The right secret is not let in by the record either: bcrypt lets it in.
      await expect(fresh.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
      await settled();

      expect(fresh.hasher.compares()).toHaveLength(2);
      expect(events.seen).toEqual(['checked:refused', 'checked:refused', 'wrote:written']);
    }
  });

  it('refuses an expired pair whose record still lives, after one compare against the dummy hash', async () => {
    let now = START;
    const expiring = {
      ...pairs[0],
      expiresAt: new Date(START + 60_000).toISOString(),
    } as KeyRecord;
    store = createMemoryStore({ keys: [expiring] }, () => now);
    await gateway(store, { now: () => now }).verify(alice);
    await settled();
    now = START + 60_000;
    const later = gateway(store, { now: () => now });

    await expect(later.verify(alice)).resolves.toBe(DENIED.invalid_credentials);
    expect(later.hasher.compares()).toEqual([{ secret: alice.secret, hash: dummyHash }]);
  });

  it('ends a record with its pair: a record never outlives the expiry it was written under', async () => {
    const expiresAt = new Date(START + 60_000).toISOString();
    store = createMemoryStore({ keys: [{ ...pairs[0], expiresAt } as KeyRecord] }, () => START);
    await gateway(store).verify(alice);
    await settled();

    expect((await store.getKey(alice.key))?.verifiedRecord).toMatch(
      new RegExp(`^v1\\.[0-9a-f]{8}\\.${START + 60_000}\\.`),
    );
  });

  it('refuses a revoked pair and a re-hashed one on every gateway, each at bcrypt cost', async () => {
    await gateway(store).verify(alice);
    await gateway(store).verify(bob);
    await settled();
    await store.revokeKey(alice.key, new Date(START).toISOString());
    const bobHash = (await store.getKey(bob.key))?.secretHash ?? '';
    await store.replaceHash({ kind: 'key', key: bob.key }, bobHash, await hasher.hash('new'));
    const other = gateway(store);

    await expect(other.verify(alice)).resolves.toBe(DENIED.invalid_credentials);
    await expect(other.verify(bob)).resolves.toBe(DENIED.invalid_credentials);
    expect(other.hasher.compares()).toHaveLength(2);
  });

  it('keeps no record for a secret of another form, and one for a pair its writer marked strong', async () => {
    await gateway(store).verify(WEAK);
    await gateway(store).verify(MARKED);
    await settled();
    const events = recordingEvents();
    const other = gateway(store, { events });

    await expect(other.verify(WEAK)).resolves.toEqual(identityOf(WEAK.key, 'carol'));
    await expect(other.verify(MARKED)).resolves.toEqual(identityOf(MARKED.key, 'dave'));
    expect(other.hasher.compares().map(({ secret }) => secret)).toEqual([WEAK.secret]);
    expect(events.seen).toEqual(['checked:hit']);
    expect((await store.getKey(WEAK.key))?.verifiedRecord).toBeUndefined();
  });

  it('renews a record past half its life on a hit, and leaves a younger one alone', async () => {
    let now = START;
    await gateway(store, { now: () => now }).verify(alice);
    await settled();
    const first = (await store.getKey(alice.key))?.verifiedRecord;
    now = START + 2 * HOUR_SEC * 1000;
    const events = recordingEvents();
    await gateway(store, { now: () => now, events }).verify(alice);
    await settled();
    expect((await store.getKey(alice.key))?.verifiedRecord).toBe(first);
    now = START + 4 * HOUR_SEC * 1000;

    await gateway(store, { now: () => now, events }).verify(alice);
    await settled();

    expect(events.seen).toEqual(['checked:hit', 'checked:hit', 'wrote:renewed']);
    expect((await store.getKey(alice.key))?.verifiedRecord).toMatch(
      new RegExp(`^v1\\.[0-9a-f]{8}\\.${now + 6 * HOUR_SEC * 1000}\\.`),
    );
  });

  it('lets bcrypt decide while the store cannot give the fleet key, and uses records once it can', async () => {
    await gateway(store).verify(alice);
    await settled();
    let down = true;
    const flaky: CredentialStore = {
      ...store,
      fleetKey: () => (down ? Promise.reject(new Error('down')) : store.fleetKey()),
    };
    const events = recordingEvents();
    const other = gateway(flaky, { events });

    await expect(other.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
    down = false;
    const again = gateway(flaky, { events });
    await expect(again.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));

    expect(other.hasher.compares()).toHaveLength(1);
    expect(again.hasher.compares()).toHaveLength(0);
    expect(events.seen.slice(0, 1)).toEqual(['fleet key unavailable']);
    expect(events.seen).toContain('checked:hit');
  });

  it("checks with an operator's fleet key when one is configured, and tells a store's records apart", async () => {
    await gateway(store).verify(alice);
    await settled();
    const configured = parseFleetKey(newFleetKeyText());
    const events = recordingEvents();
    const other = gateway(store, { events, ...(configured && { fleetKey: configured }) });

    await expect(other.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
    await settled();

    expect(other.hasher.compares()).toHaveLength(1);
    expect(events.seen).toEqual(['checked:other_key', 'wrote:written']);
    expect((await store.getKey(alice.key))?.verifiedRecord).toContain(`v1.${configured?.id}.`);
  });
});

describe('verified records under the lockout', () => {
  /** Address threshold 6, (key, address) 3, key-wide 5 (lockout-contract.ts). */
  const lockout = () => createMemoryLockout(lockoutConfig());

  it('lets more parallel cold checks from one network through than its threshold, when records prove them', async () => {
    const holders = Array.from({ length: 20 }, (_, i) => generateKeyPair(`holder-${i}`));
    const stored = await Promise.all(
      holders.map(async (pair, i) => ({
        ...pair,
        subject: `holder-${i}`,
        secretHash: await hasher.hash(pair.secret),
        label: '',
        status: 'active' as const,
        createdAt: '2026-01-01T00:00:00.000Z',
        scopes: ['accounts:read'],
      })),
    );
    const store = createMemoryStore({ keys: stored }, () => START);
    const first = gateway(store);
    for (const pair of holders) await first.verify(pair);
    await settled();
    const restarted = gateway(store, { lockout: lockout() });

    const outcomes = await Promise.all(holders.map((pair) => restarted.verify(pair)));

    expect(outcomes).toEqual(holders.map((pair, i) => identityOf(pair.key, `holder-${i}`)));
    expect(restarted.hasher.compares()).toHaveLength(0);
  });

  it('refuses guesses at a locked (key, address) before bcrypt, and lets the secret its record proves through, as a cached pair', async () => {
    const store = createMemoryStore({ keys: pairs }, () => START);
    await gateway(store).verify(alice);
    await settled();
    const locked = gateway(store, { lockout: lockout() });
    for (let i = 0; i < 3; i += 1) await locked.verify({ ...alice, secret: bob.secret });

    await expect(locked.verify({ ...alice, secret: bob.secret })).rejects.toMatchObject({
      code: 'rate_limited',
    });
    await expect(locked.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
    expect(locked.hasher.compares()).toHaveLength(3);
  });

  it('counts a hit as no attempt: it neither spends the (key, address) count nor clears it', async () => {
    const store = createMemoryStore({ keys: pairs }, () => START);
    await gateway(store).verify(alice);
    await settled();
    const at = gateway(store, { lockout: lockout() });
    for (let i = 0; i < 2; i += 1) await at.verify({ ...alice, secret: bob.secret });

    for (let i = 0; i < 5; i += 1)
      await expect(at.verify(alice)).resolves.toEqual(identityOf(alice.key, 'alice'));
    await expect(at.verify({ ...alice, secret: bob.secret })).resolves.toBe(
      DENIED.invalid_credentials,
    );

    // The third failure locked the pair from this network: the two before the hits still counted.
    await expect(at.verify({ ...alice, secret: bob.secret })).rejects.toBeInstanceOf(GatewayError);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import {
  createBasicAuthenticator,
  type BasicAuthenticatorOptions,
} from '../../../src/auth/basic-authenticator.js';
import { createRehashOnUse, type RehashEvent } from '../../../src/auth/rehash-on-use.js';
import { createSecretVerifier } from '../../../src/auth/secret-verifier.js';
import type { CredentialStore, KeyRecord } from '../../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../../src/backends/memory/credential-store.js';
import { createSecretHasher } from '../../../src/credentials/secret-hasher.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { countingHasher } from '../../support/counting-hasher.js';

// Rehash-on-use behind the Basic check, on the memory store: the gateway at cost 5, pairs
// stored at other costs and variants.

const CONFIGURED_COST = 5;
const KEY = 'ak_rehashRRRRRRRRRRRRRRRRRR';
const SECRET = 'rehash-secret-0123456789';
const OWNER = { kind: 'key', key: KEY } as const;

const configured = createSecretHasher(CONFIGURED_COST);
let dummyHash: string;
/** The pair's secret at cost 4, below the configured cost. */
let cheapHash: string;

beforeAll(async () => {
  [dummyHash, cheapHash] = await Promise.all([
    configured.hash('a random dummy secret'),
    createSecretHasher(4).hash(SECRET),
  ]);
});

function pair(secretHash: string): KeyRecord {
  return {
    key: KEY,
    subject: 'rita',
    secretHash,
    label: '',
    status: 'active',
    createdAt: '2030-01-01T00:00:00.000Z',
    scopes: [],
  };
}

/** The authenticator over a memory store holding the pair with `secretHash`. */
function setup(
  secretHash: string,
  options: Partial<BasicAuthenticatorOptions> & { store?: CredentialStore } = {},
) {
  const store = options.store ?? createMemoryStore({ keys: [pair(secretHash)] });
  let lookups = 0;
  const counted: CredentialStore = {
    ...store,
    getKey(key) {
      lookups += 1;
      return store.getKey(key);
    },
  };
  const hasher = countingHasher(configured);
  const hashing = { hasher, dummyHash, maxConcurrentHashes: 4, maxQueuedHashes: 16, ...options };
  const verifier = createSecretVerifier(hashing);
  const events: RehashEvent[] = [];
  const waiting: ((event: RehashEvent) => void)[] = [];
  const rehash = createRehashOnUse({
    store: counted,
    verifier,
    onRehash(event) {
      events.push(event);
      waiting.shift()?.(event);
    },
  });
  const basic = createBasicAuthenticator({
    store: counted,
    ...hashing,
    verifier,
    rehash,
    cacheTtlSec: 60,
    cacheMaxEntries: 100,
    ...options,
  });
  return {
    basic,
    store,
    hasher,
    events,
    lookups: () => lookups,
    /** The next rehash to end (none may have ended unseen before it). */
    nextRehash: () => new Promise<RehashEvent>((resolve) => waiting.push(resolve)),
  };
}

const storedHash = async (store: CredentialStore): Promise<string | undefined> =>
  (await store.getKey(KEY))?.secretHash;

const IDENTITY = { subject: 'rita', method: 'basic', key: KEY, scopes: [] };

describe('rehash on use, after a successful Basic check', () => {
  it('rewrites a hash below the configured cost as $2b$ at the configured cost, against which the secret still verifies', async () => {
    const { basic, store, nextRehash } = setup(cheapHash);
    const rehashed = nextRehash();
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(IDENTITY);

    await expect(rehashed).resolves.toEqual({
      owner: OWNER,
      outcome: 'written',
      from: { variant: '2b', cost: 4 },
    });
    const stored = await storedHash(store);
    expect(stored).toMatch(/^\$2b\$05\$/);
    await expect(configured.verify(SECRET, stored ?? '')).resolves.toBe(true);
  });

  it('rewrites a $2y$ hash of the configured cost as $2b$', async () => {
    const written = await configured.hash(SECRET);
    const { basic, store, nextRehash } = setup(`$2y$${written.slice(4)}`);
    const rehashed = nextRehash();
    await basic.verify(KEY, SECRET);

    await expect(rehashed).resolves.toMatchObject({
      outcome: 'written',
      from: { variant: '2y', cost: CONFIGURED_COST },
    });
    expect(await storedHash(store)).toMatch(/^\$2b\$05\$/);
  });

  it('rewrites a hash above the configured cost down to it', async () => {
    const { basic, store, nextRehash } = setup(await createSecretHasher(6).hash(SECRET));
    const rehashed = nextRehash();
    await basic.verify(KEY, SECRET);

    await expect(rehashed).resolves.toMatchObject({ outcome: 'written' });
    expect(await storedHash(store)).toMatch(/^\$2b\$05\$/);
  });

  it('leaves a $2b$ hash of the configured cost as it is: no hash made, nothing written', async () => {
    const current = await configured.hash(SECRET);
    const { basic, store, hasher, events } = setup(current);
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(IDENTITY);

    // A rewrite would have started within the check: its hash would be counted by now.
    expect(hasher.hashes()).toBe(0);
    expect(events).toEqual([]);
    expect(await storedHash(store)).toBe(current);
  });

  it('rewrites nothing after a wrong secret', async () => {
    const { basic, store, hasher } = setup(cheapHash);
    await basic.verify(KEY, `${SECRET}x`);

    expect(hasher.hashes()).toBe(0);
    expect(await storedHash(store)).toBe(cheapHash);
  });

  it('answers the check before the new hash is made or written', async () => {
    const { basic, store, hasher, nextRehash } = setup(cheapHash);
    const release = hasher.holdHashes();
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(IDENTITY);

    expect(hasher.hashes()).toBe(1);
    expect(await storedHash(store)).toBe(cheapHash);
    const rehashed = nextRehash();
    release();
    await expect(rehashed).resolves.toMatchObject({ outcome: 'written' });
  });

  it('does not overwrite a hash that changed while the rewrite was under way', async () => {
    const { basic, store, hasher, nextRehash } = setup(cheapHash);
    const release = hasher.holdHashes();
    await basic.verify(KEY, SECRET);
    // Meanwhile the owner's secret is replaced (another service, or another instance's rehash).
    const replacement = await createSecretHasher(4).hash('a new secret 0123456789');
    await expect(store.replaceHash(OWNER, cheapHash, replacement)).resolves.toBe(true);

    const rehashed = nextRehash();
    release();
    await expect(rehashed).resolves.toMatchObject({ outcome: 'superseded' });
    expect(await storedHash(store)).toBe(replacement);
  });

  it('keeps the verified pair in the cache across the rewrite: the same secret, no new lookup', async () => {
    const { basic, store, lookups, nextRehash } = setup(cheapHash);
    const rehashed = nextRehash();
    await basic.verify(KEY, SECRET);
    await expect(rehashed).resolves.toMatchObject({ outcome: 'written' });

    const encoded = Buffer.from(`${KEY}:${SECRET}`).toString('base64');
    expect(basic.cached(encoded)).toEqual(IDENTITY);
    expect(lookups()).toBe(1);
    expect(await storedHash(store)).not.toBe(cheapHash);
  });

  it('starts one rewrite per credential at a time, however many checks succeed meanwhile', async () => {
    const { basic, hasher, events, nextRehash } = setup(cheapHash, { cacheTtlSec: 0 });
    const release = hasher.holdHashes();
    for (let i = 0; i < 3; i += 1)
      await expect(basic.verify(KEY, SECRET)).resolves.toEqual(IDENTITY);

    expect(hasher.hashes()).toBe(1);
    const rehashed = nextRehash();
    release();
    await rehashed;
    expect(events.map((event) => event.outcome)).toEqual(['written']);
  });

  it('reports a write the store cannot make as failed, the check having answered with the identity', async () => {
    const down = new GatewayError('credential_store_unavailable');
    const memory = createMemoryStore({ keys: [pair(cheapHash)] });
    const store: CredentialStore = { ...memory, replaceHash: () => Promise.reject(down) };
    const { basic, nextRehash } = setup(cheapHash, { store });
    const rehashed = nextRehash();
    await expect(basic.verify(KEY, SECRET)).resolves.toEqual(IDENTITY);

    await expect(rehashed).resolves.toEqual({
      owner: OWNER,
      outcome: 'failed',
      from: { variant: '2b', cost: 4 },
      error: down,
    });
    expect(await storedHash(memory)).toBe(cheapHash);
  });

  it('runs within the bcrypt bound: while the rewrite holds the only slot, a further check is refused', async () => {
    // Above the configured cost: the check itself is one compare (a cheaper hash takes two).
    const dear = await createSecretHasher(6).hash(SECRET);
    const { basic, hasher, nextRehash } = setup(dear, {
      maxConcurrentHashes: 1,
      maxQueuedHashes: 0,
    });
    const release = hasher.holdHashes();
    await basic.verify(KEY, SECRET);

    await expect(basic.verify(KEY, 'another guess')).rejects.toMatchObject({ code: 'overloaded' });
    const rehashed = nextRehash();
    release();
    await expect(rehashed).resolves.toMatchObject({ outcome: 'written' });
  });
});

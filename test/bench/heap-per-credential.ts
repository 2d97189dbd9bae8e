// Heap bytes per cached Basic credential, in process, on the built gateway's own code path:
// the authenticator of src/auth (from dist/) with a fake store and a verifier that always
// matches, filled through authenticate() with N distinct Authorization headers, so every key
// string is the one parsing made. heapUsed after a full GC, before and after, over N.
// Usage (run-bench.ts does this): node --expose-gc --import ./resolve-hook.ts heap-per-credential.ts N
import { createAuthenticator } from '../../src/auth/authenticate.js';
import { createBasicAuthenticator } from '../../src/auth/basic-authenticator.js';
import type { BearerVerifier } from '../../src/auth/jwt/bearer-verifier.js';
import { createIdentityCache } from '../../src/auth/identity-cache.js';
import type { SecretVerifier } from '../../src/auth/secret-verifier.js';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';

const count = Number(process.argv[2] ?? 100_000);
const gc = globalThis.gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const KEY_PREFIX = 'ak_heap_';
// Keys like the gateway's (ak_ + 24 characters), secrets like its 48-character ones.
const keyOf = (i: number): string => KEY_PREFIX + String(i).padStart(19, '0');
const secretOf = (i: number): string => `s${String(i).padStart(8, '0')}`.padEnd(48, 'x');

/** As the Redis store answers: a fresh record, its subject a fresh string (10 pairs each). */
const store = {
  getKey(key: string): Promise<KeyRecord | undefined> {
    const index = Number(key.slice(KEY_PREFIX.length));
    return Promise.resolve({
      key,
      subject: `bench-${Math.floor(index / 10)}`,
      secretHash: '$2b$10$fake',
      label: '',
      status: 'active',
      createdAt: new Date().toISOString(),
      scopes: [],
    });
  },
} as Partial<CredentialStore> as CredentialStore;

const verifier: SecretVerifier = {
  verify: () => Promise.resolve(true),
  hash: () => Promise.resolve(''),
  isCurrent: () => true,
  work: () => ({ running: 0, queued: 0 }),
};

const basic = createBasicAuthenticator({
  store,
  hasher: { hash: () => Promise.resolve(''), verify: () => Promise.resolve(true) },
  dummyHash: '$2b$10$fake',
  cacheTtlSec: 3600,
  cacheMaxEntries: count * 2,
  maxConcurrentHashes: 4,
  maxQueuedHashes: 64,
  verifier,
});
const bearer: BearerVerifier = {
  cached: () => undefined,
  verify: () => Promise.reject(new Error('no bearer here')),
  evictSubject: () => undefined,
  cacheEntries: () => 0,
  verified: createIdentityCache({ maxEntries: 1, ttlMs: 1 }),
};
const authenticator = createAuthenticator({ realm: 'bench', basic, bearer, maxTokenBytes: 8192 });

const header = (i: number): string =>
  `Basic ${Buffer.from(`${keyOf(i)}:${secretOf(i)}`).toString('base64')}`;

function settle(): number {
  for (let i = 0; i < 4; i += 1) gc?.();
  return process.memoryUsage().heapUsed;
}

const before = settle();
for (let i = 0; i < count; i += 1) {
  const outcome = await authenticator.authenticate(header(i), ['basic', 'bearer']);
  if (!('subject' in outcome)) throw new Error(`pair ${i} was not accepted`);
}
const after = settle();

// Every pair must now be a cache hit (the sample checks it), or the figure means nothing.
let hits = 0;
const sample = Math.min(count, 1000);
for (let j = 0; j < sample; j += 1) {
  const i = Math.floor((j * count) / sample);
  if (basic.cached(header(i).slice('Basic '.length)) !== undefined) hits += 1;
}

process.stdout.write(
  `${JSON.stringify({
    pairs: count,
    heapUsedBefore: before,
    heapUsedAfter: after,
    bytesPerCredential: (after - before) / count,
    sampleHits: hits,
    sampleSize: sample,
  })}\n`,
);

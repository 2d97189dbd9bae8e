import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createRefusal, createScopeRefusal } from '../../src/auth/refusal.js';
import { createSecretVerifier } from '../../src/auth/secret-verifier.js';
import fc from 'fast-check';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';
import {
  CREATE_KEY_MESSAGES,
  SCOPE_ESCALATION_MESSAGE,
  SCOPES_MESSAGE,
} from '../../src/errors/gateway-error.js';
import { createMemoryStore } from '../../src/backends/memory/credential-store.js';
import { createSecretHasher, type SecretHasher } from '../../src/credentials/secret-hasher.js';
import { createKeysEndpoints } from '../../src/endpoints/keys-endpoints.js';
import { memoryAuditTrail } from '../support/audit-trail.js';
import { countingHasher } from '../support/counting-hasher.js';
import { serveEndpoint } from '../support/endpoint-server.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { fromFetch } from '../support/http-answer.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';

// POST /keys on its own over a real socket, with a hasher the test counts: what the e2e
// tests cannot see from outside the process.

const MAX_ACTIVE = 2;
const hasher = createSecretHasher(TEST_BCRYPT_COST);
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

function pair(key: string, subject: string): KeyRecord {
  return {
    key,
    subject,
    secretHash: '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq',
    label: '',
    status: 'active',
    createdAt: '2024-05-01T10:00:00.000Z',
    scopes: [],
  };
}

/** The endpoints behind a bare node:http server on port 0, for a caller of `subject`. */
async function startKeys(subject: string, counted: SecretHasher): Promise<string> {
  const store = createMemoryStore({
    keys: [pair('ak_full_1', 'full'), pair('ak_full_2', 'full'), pair('ak_room_1', 'room')],
  });
  const { collection } = createKeysEndpoints({
    store,
    audit: memoryAuditTrail(),
    verifier: createSecretVerifier({
      hasher: counted,
      dummyHash: '',
      maxConcurrentHashes: 1,
      maxQueuedHashes: 1,
    }),
    schemes: ['basic'],
    refuse: createRefusal('test'),
    refuseScope: createScopeRefusal('test'),
    maxActivePerSubject: MAX_ACTIVE,
    requiredScopes: [],
    maxBodyBytes: 1024,
    onRevoked: () => undefined,
    gatewayTokenSource: 'gateway',
    now: Date.now,
  });
  const { url, server } = await serveEndpoint(collection, {
    subject,
    method: 'basic',
    key: `ak_${subject}_1`,
    scopes: [],
  });
  servers.push(server);
  return `${url}/keys`;
}

describe('POST /keys and the per-subject cap', () => {
  it('answers 422 to a subject at its cap without running bcrypt', async () => {
    const counted = countingHasher(hasher);
    const res = await fromFetch(await fetch(await startKeys('full', counted), { method: 'POST' }));
    expect(res.status).toBe(422);
    // serveEndpoint gives every request the id test-request.
    expectGatewayError(res, 'limit_exceeded', { requestId: 'test-request' });
    expect(counted.hashes()).toBe(0);
  });

  it('hashes the new secret once for a subject below its cap', async () => {
    const counted = countingHasher(hasher);
    const res = await fetch(await startKeys('room', counted), { method: 'POST' });
    expect(res.status).toBe(201);
    await res.arrayBuffer();
    expect(counted.hashes()).toBe(1);
  });
});

/** POST /keys for a Basic caller whose scopes the test sets before each request. */
async function startScopedKeys(): Promise<{
  url: string;
  store: CredentialStore;
  callerScopes: { current: readonly string[] };
}> {
  // The caller's own pair: a Basic caller's pair is read again when it makes one.
  const store = createMemoryStore({ keys: [pair('ak_scoped_1', 'scoped')] });
  const { collection } = createKeysEndpoints({
    store,
    audit: memoryAuditTrail(),
    verifier: createSecretVerifier({
      hasher,
      dummyHash: '',
      maxConcurrentHashes: 1,
      maxQueuedHashes: 16,
    }),
    schemes: ['basic'],
    refuse: createRefusal('test'),
    refuseScope: createScopeRefusal('test'),
    maxActivePerSubject: 1000,
    requiredScopes: [],
    maxBodyBytes: 4096,
    onRevoked: () => undefined,
    gatewayTokenSource: 'gateway',
    now: Date.now,
  });
  const callerScopes = { current: [] as readonly string[] };
  const { url, server } = await serveEndpoint(collection, {
    subject: 'scoped',
    method: 'basic',
    key: 'ak_scoped_1',
    get scopes() {
      return callerScopes.current;
    },
  });
  servers.push(server);
  return { url: `${url}/keys`, store, callerScopes };
}

const postKeys = async (url: string, body: unknown) =>
  fromFetch(
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

describe('POST /keys and labels', () => {
  it('takes 200 emoji, and refuses 201, a lone surrogate, a C1 control and a bidi override', async () => {
    const { url, callerScopes } = await startScopedKeys();
    callerScopes.current = ['keys'];
    const emoji = '\u{1F511}'.repeat(200);
    const made = await postKeys(url, { label: emoji });
    expect(made.status).toBe(201);
    expect((made.json as { data: { label: string }[] }).data[0]?.label).toBe(emoji);
    for (const label of [`${emoji}x`, 'a\ud800b', 'a\u0085b', 'a\u009bb', 'a\u202eb'])
      expectGatewayError(await postKeys(url, { label }), 'bad_request', {
        requestId: 'test-request',
        message: CREATE_KEY_MESSAGES.label,
      });
  });
});

describe('POST /keys and scopes', () => {
  it("gives a new pair the caller's own scopes when the body names none", async () => {
    const { url, store, callerScopes } = await startScopedKeys();
    callerScopes.current = ['accounts:read', 'keys'];
    const res = await postKeys(url, { label: 'x' });
    expect(res.status).toBe(201);
    const [view] = (res.json as { data: { key: string; scopes: string[] }[] }).data;
    expect(view?.scopes).toEqual(['accounts:read', 'keys']);
    await expect(store.getKey(view?.key ?? '')).resolves.toMatchObject({
      scopes: ['accounts:read', 'keys'],
    });
  });

  it('makes a pair with fewer scopes than the caller, or none', async () => {
    const { url, callerScopes } = await startScopedKeys();
    callerScopes.current = ['accounts:read', 'keys'];
    for (const scopes of [['keys'], []]) {
      const res = await postKeys(url, { scopes });
      expect(res.status).toBe(201);
      expect((res.json as { data: { scopes: string[] }[] }).data[0]?.scopes).toEqual(scopes);
    }
  });

  it('answers 403 forbidden to a scope the caller does not hold, making nothing', async () => {
    const { url, store, callerScopes } = await startScopedKeys();
    callerScopes.current = ['accounts:read'];
    const res = await postKeys(url, { scopes: ['accounts:read', 'admin'] });
    expectGatewayError(res, 'forbidden', {
      requestId: 'test-request',
      message: SCOPE_ESCALATION_MESSAGE,
    });
    expect((await store.listKeys('scoped'))?.map((r) => r.key)).toEqual(['ak_scoped_1']);
  });

  it('answers 400 to scopes that are not an array of different scope tokens', async () => {
    const { url, callerScopes } = await startScopedKeys();
    callerScopes.current = ['a'];
    for (const scopes of ['a', ['a', 'a'], ['a b'], [1], [''], null])
      expectGatewayError(await postKeys(url, { scopes }), 'bad_request', {
        requestId: 'test-request',
        message: SCOPES_MESSAGE,
      });
  });

  it("never yields a pair with a scope outside the caller's, whatever the body asks", async () => {
    const { url, store, callerScopes } = await startScopedKeys();
    const pool = ['a', 'b', 'c', 'd:e', 'x y', '', 7];
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd:e')),
        fc.option(fc.array(fc.constantFrom(...pool), { maxLength: 5 }), { nil: undefined }),
        async (held, asked) => {
          callerScopes.current = held;
          const res = await postKeys(url, asked === undefined ? {} : { scopes: asked });
          expect([201, 400, 403]).toContain(res.status);
          if (res.status === 201) {
            const [view] = (res.json as { data: { key: string; scopes: string[] }[] }).data;
            const stored = await store.getKey(view?.key ?? '');
            for (const scope of [...(view?.scopes ?? []), ...(stored?.scopes ?? [])])
              expect(held).toContain(scope);
          }
        },
      ),
      { numRuns: 60 },
    );
    // And across every run: nothing the caller could not hold was ever stored.
    for (const record of (await store.listKeys('scoped')) ?? [])
      for (const scope of record.scopes) expect(['a', 'b', 'c', 'd:e']).toContain(scope);
  });
});

import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createRefusal } from '../../src/auth/refusal.js';
import { createSecretVerifier } from '../../src/auth/secret-verifier.js';
import type { KeyRecord } from '../../src/credentials/credential-store.js';
import { createMemoryStore } from '../../src/credentials/memory-store.js';
import { createSecretHasher, type SecretHasher } from '../../src/credentials/secret-hasher.js';
import { createKeysEndpoints } from '../../src/endpoints/keys-endpoints.js';
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
  };
}

/** The endpoints behind a bare node:http server on port 0, for a caller of `subject`. */
async function startKeys(subject: string, counted: SecretHasher): Promise<string> {
  const store = createMemoryStore({
    keys: [pair('ak_full_1', 'full'), pair('ak_full_2', 'full'), pair('ak_room_1', 'room')],
  });
  const { collection } = createKeysEndpoints({
    store,
    verifier: createSecretVerifier({
      hasher: counted,
      dummyHash: '',
      maxConcurrentHashes: 1,
      maxQueuedHashes: 1,
    }),
    schemes: ['basic'],
    refuse: createRefusal('test'),
    maxActivePerSubject: MAX_ACTIVE,
    maxBodyBytes: 1024,
    onRevoked: () => undefined,
    gatewayTokenSource: 'gateway',
    now: Date.now,
  });
  const { url, server } = await serveEndpoint(collection, {
    subject,
    method: 'basic',
    key: `ak_${subject}_1`,
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

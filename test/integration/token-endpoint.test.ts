import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMemoryLockout } from '../../src/backends/memory/lockout-store.js';
import { SILENT_LOCKOUT_EVENTS } from '../../src/protection/guard-attempt.js';
import { createRefusal } from '../../src/auth/refusal.js';
import { createSecretVerifier } from '../../src/auth/secret-verifier.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { openRedisStore } from '../support/redis-store.js';
import { createSecretHasher, type SecretHasher } from '../../src/credentials/secret-hasher.js';
import { createTokenEndpoint } from '../../src/endpoints/token-endpoint.js';
import { createSigningKeys } from '../../src/tokens/signing-key.js';
import { createTokenSigner, type TokenSigner } from '../../src/tokens/token-signer.js';
import { countingHasher } from '../support/counting-hasher.js';
import { serveEndpoint } from '../support/endpoint-server.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { comparableHeaders, fromFetch, type HttpAnswer } from '../support/http-answer.js';
import { redisConfig } from '../support/redis-config.js';
import { TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';

// POST /auth/token on its own, over a real socket and the Redis store, with a bcrypt hasher
// the test can count and hold: what the e2e tests cannot see from outside the process.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('token');
const hasher = createSecretHasher(TEST_BCRYPT_COST);
const ALICE = { username: 'alice', subject: 'subject-alice', password: 'alice-password-1' };

let store: CredentialStore;
let signer: TokenSigner;
let dummyHash: string;
let aliceHash: string;
const servers: Server[] = [];

beforeAll(async () => {
  store = openRedisStore(redisConfig(redisUrl, prefix));
  dummyHash = await hasher.hash(randomBytes(32).toString('base64'));
  aliceHash = await hasher.hash(ALICE.password);
  await store.addUser({
    username: ALICE.username,
    subject: ALICE.subject,
    passwordHash: aliceHash,
    createdAt: new Date().toISOString(),
    scopes: [],
  });
  const config = parseConfig(gatewayYaml({ upstreamUrl: 'builtin' }), 'token-test.yaml');
  signer = await createTokenSigner(createSigningKeys(() => undefined).resolve(config.tokens));
});

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

afterAll(async () => {
  await store.close();
});

/** The lockout with every threshold out of reach unless a test lowers one. */
function lockoutConfig(usernameAddress = 100) {
  const config = parseConfig(
    gatewayYaml({
      config: {
        lockout: {
          initialLockSec: 60,
          token: { usernameAddress: { threshold: usernameAddress, maxLockSec: 600 } },
        },
      },
    }),
    'token-lockout.yaml',
  );
  return config.lockout;
}

/** The endpoint behind a bare server on port 0; resolves with its /auth/token URL. */
async function startEndpoint(counted: SecretHasher, usernameAddress?: number): Promise<string> {
  const endpoint = createTokenEndpoint({
    store,
    verifier: createSecretVerifier({
      hasher: counted,
      dummyHash,
      // Wide enough that every request of a burst reaches the hasher rather than a queue.
      maxConcurrentHashes: 32,
      maxQueuedHashes: 32,
    }),
    signer,
    lockout: createMemoryLockout(lockoutConfig(usernameAddress)),
    lockoutEvents: SILENT_LOCKOUT_EVENTS,
    maxBodyBytes: 1024,
    refuse: createRefusal('accounts-gateway'),
  });
  const { url, server } = await serveEndpoint(endpoint, undefined);
  servers.push(server);
  return `${url}/auth/token`;
}

/** The request id serveEndpoint gives every request. */
const REQUEST_ID = 'test-request';

async function login(url: string, username: string, password: string): Promise<HttpAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  return fromFetch(res);
}

describe('POST /auth/token: the password compare', () => {
  it('compares an unknown username’s password against the dummy hash, as it does a wrong one', async () => {
    const counted = countingHasher(hasher);
    const url = await startEndpoint(counted);
    const unknown = await login(url, 'nobody-by-this-name', 'guess-1');
    const wrong = await login(url, ALICE.username, 'guess-2');
    for (const answer of [unknown, wrong]) {
      expectGatewayError(answer, 'invalid_credentials', {
        requestId: REQUEST_ID,
        message: 'The credentials are not valid.',
      });
      expect(answer.headers['retry-after']).toBeUndefined();
      expect(answer.headers['www-authenticate']).toBe('Bearer realm="accounts-gateway"');
    }
    expect([unknown.body, comparableHeaders(unknown.headers)]).toEqual([
      wrong.body,
      comparableHeaders(wrong.headers),
    ]);
    expect(counted.compares()).toEqual([
      { secret: 'guess-1', hash: dummyHash },
      { secret: 'guess-2', hash: aliceHash },
    ]);
  });
});

describe('POST /auth/token: the lockout', () => {
  it('lets no more than the threshold of parallel wrong passwords reach bcrypt, and refuses the rest with 429', async () => {
    const maxFailures = 10;
    const burst = maxFailures + 5;
    let answered = 0;
    let everyRequestArrived = (): void => undefined;
    const arrived = new Promise<void>((resolve) => (everyRequestArrived = resolve));
    // Each request of the burst either waits in bcrypt (held) or has been answered.
    const progress = (): void => {
      if (counted.compares().length + answered === burst) everyRequestArrived();
    };
    const counted = countingHasher(hasher, progress);
    const url = await startEndpoint(counted, maxFailures);
    const release = counted.hold();
    const answers = Array.from({ length: burst }, (_, i) =>
      login(url, ALICE.username, `guess-${i}`).then((answer) => {
        answered += 1;
        progress();
        return answer;
      }),
    );
    // Every guess overlaps every other: none has failed by the time the last one arrives.
    await arrived;
    release();
    const results = await Promise.all(answers);

    expect(counted.compares()).toHaveLength(maxFailures);
    const refused = results.filter((r) => r.status === 429);
    expect(results.filter((r) => r.status === 401)).toHaveLength(maxFailures);
    expect(refused).toHaveLength(burst - maxFailures);
    for (const answer of refused) {
      expectGatewayError(answer, 'rate_limited', {
        requestId: REQUEST_ID,
        message: 'Too many requests; retry later.',
      });
      // Refused while the guesses in flight would reach the threshold: the lock they start.
      expect(answer.headers['retry-after']).toBe('60');
    }
  });

  it('answers 429 to the right password once its (username, address) is locked, and compares nothing', async () => {
    const counted = countingHasher(hasher);
    const url = await startEndpoint(counted, 2);
    expect((await login(url, ALICE.username, 'guess-1')).status).toBe(401);
    expect((await login(url, ALICE.username, 'guess-2')).status).toBe(401);
    const refused = await login(url, ALICE.username, ALICE.password);
    expectGatewayError(refused, 'rate_limited', { requestId: REQUEST_ID });
    expect(['59', '60']).toContain(refused.headers['retry-after']);
    expect(counted.compares()).toHaveLength(2);
  });
});

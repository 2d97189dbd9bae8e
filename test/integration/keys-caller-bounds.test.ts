import bcrypt from 'bcrypt';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import type { KeyRecord } from '../../src/credentials/credential-store.js';
import { OUTLIVE_MESSAGE } from '../../src/errors/gateway-error.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { redisConfig } from '../support/redis-config.js';
import { putUser, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';

// What the caller's own credential bounds at /keys, through a gateway in this process on a
// clock the test moves: a Basic caller's pair bounds the life of the pairs it makes (on
// both stores), and a gateway token counts only the scopes its user still holds.

const redisUrl = inject('redisUrl');
const START_MS = Date.parse('2030-01-01T00:00:00.000Z');
const MAKER = { key: 'ak_maker_expiring', secret: 'maker-secret-0123456789abcdef' };
const LIFETIME_MS = 120_000;
const USER = { username: 'una@example.com', password: 'una-password-1' };

let upstream: EchoUpstream;
const running: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startEchoUpstream();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((gateway) => gateway.close()));
});

afterAll(async () => {
  await upstream?.close();
});

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

interface View {
  key: string;
  secret: string;
  expires_at: string | null;
}

const viewOf = (json: unknown): View => {
  const [view] = (json as { data: View[] }).data;
  if (view === undefined) throw new Error('no pair in the answer');
  return view;
};

async function makerRecord(): Promise<KeyRecord> {
  return {
    key: MAKER.key,
    subject: 'maker',
    secretHash: await bcrypt.hash(MAKER.secret, TEST_BCRYPT_COST),
    label: 'expiring',
    status: 'active',
    createdAt: new Date(START_MS).toISOString(),
    expiresAt: new Date(START_MS + LIFETIME_MS).toISOString(),
    scopes: [],
  };
}

const BACKENDS = {
  memory: async (now: () => number): Promise<Backend> =>
    createMemoryBackend({ seed: { keys: [await makerRecord()] }, now }),
  redis: async (now: () => number): Promise<Backend> => {
    const backend = createRedisBackend(redisConfig(redisUrl, uniquePrefix('outlive')), { now });
    await backend.credentials.createKey(await makerRecord(), 10);
    return backend;
  },
};

describe.each(Object.entries(BACKENDS))('a pair made by an expiring pair (%s store)', (_, make) => {
  const clock = { ms: START_MS };

  async function start(): Promise<string> {
    clock.ms = START_MS;
    const now = () => clock.ms;
    const gateway = await startInProcessGateway({
      redisUrl,
      keyPrefix: uniquePrefix('outlivegw'),
      upstreamUrl: upstream.url,
      now,
      backend: await make(now),
    });
    running.push(gateway);
    return gateway.url;
  }

  const post = (url: string, body: unknown) =>
    send(url, '/keys', {
      method: 'POST',
      headers: { ...JSON_TYPE, ...basic(MAKER) },
      body: JSON.stringify(body),
    });

  it('inherits the maker’s expiry when it asks for none, and stops working with it', async () => {
    const url = await start();
    const made = await post(url, { label: 'forever' });
    expect(made.status).toBe(201);
    const child = viewOf(made.json);
    expect(child.expires_at).toBe(new Date(START_MS + LIFETIME_MS).toISOString());
    expect((await send(url, '/accounts', { headers: basic(child) })).status).toBe(200);

    clock.ms = START_MS + LIFETIME_MS;
    expectGatewayError(
      await send(url, '/accounts', { headers: basic(MAKER) }),
      'invalid_credentials',
    );
    expectGatewayError(
      await send(url, '/accounts', { headers: basic(child) }),
      'invalid_credentials',
    );
  });

  it('refuses a later expiry with 400 saying why, and keeps one up to the maker’s', async () => {
    const url = await start();
    const endsAt = new Date(START_MS + LIFETIME_MS).toISOString();
    for (const body of [
      { expires_in: LIFETIME_MS / 1000 + 1 },
      { expires_at: new Date(START_MS + LIFETIME_MS + 1000).toISOString() },
    ])
      expectGatewayError(await post(url, body), 'bad_request', { message: OUTLIVE_MESSAGE });
    expect(viewOf((await post(url, { expires_at: endsAt })).json).expires_at).toBe(endsAt);
    expect(viewOf((await post(url, { expires_in: 60 })).json).expires_at).toBe(
      new Date(START_MS + 60_000).toISOString(),
    );
  });
});

describe('a pair made with a gateway token', () => {
  it("is not bound by the token's exp (users remove --revoke-keys contains such pairs)", async () => {
    const now = () => START_MS;
    const backend = createMemoryBackend({
      seed: {
        users: [
          {
            username: USER.username,
            subject: 'una',
            passwordHash: await bcrypt.hash(USER.password, TEST_BCRYPT_COST),
            createdAt: new Date(START_MS).toISOString(),
            scopes: [],
          },
        ],
      },
      now,
    });
    const gateway = await startInProcessGateway({
      redisUrl,
      keyPrefix: uniquePrefix('tokenmade'),
      upstreamUrl: upstream.url,
      now,
      backend,
    });
    running.push(gateway);
    const token = await issueToken(gateway.url, USER.username, USER.password);
    const made = await send(gateway.url, '/keys', {
      method: 'POST',
      headers: { ...JSON_TYPE, authorization: bearerHeader(token) },
      body: '{"label":"from the web app"}',
    });
    expect(made.status).toBe(201);
    expect(viewOf(made.json).expires_at).toBeNull();
  });
});

describe('keys.requiredScopes for a gateway token', () => {
  it('refuses every /keys operation with 403 once the user no longer holds the scope', async () => {
    const keyPrefix = uniquePrefix('livescopes');
    const gateway = await startInProcessGateway({
      redisUrl,
      keyPrefix,
      upstreamUrl: upstream.url,
      config: { keys: { requiredScopes: ['keys:manage'] } },
    });
    running.push(gateway);
    const user = { ...USER, subject: 'una-scoped' };
    await putUser(redisUrl, keyPrefix, { ...user, scopes: ['keys:manage'] });
    const token = await issueToken(gateway.url, user.username, user.password);
    const headers = { ...JSON_TYPE, authorization: bearerHeader(token) };
    const made = await send(gateway.url, '/keys', { method: 'POST', headers, body: '{}' });
    expect(made.status).toBe(201);
    const { key } = viewOf(made.json);

    await putUser(redisUrl, keyPrefix, { ...user, scopes: [] });

    for (const [path, method] of [
      ['/keys', 'GET'],
      ['/keys', 'POST'],
      [`/keys/${key}`, 'DELETE'],
    ] as const)
      expectGatewayError(
        await send(gateway.url, path, {
          method,
          headers,
          ...(method === 'POST' ? { body: '{}' } : {}),
        }),
        'forbidden',
      );
    // The refused DELETE changed nothing.
    await expect(gateway.gateway.store.getKey(key)).resolves.toMatchObject({ status: 'active' });
  });
});

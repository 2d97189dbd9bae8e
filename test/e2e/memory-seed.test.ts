import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { fromFetch } from '../support/http-answer.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';

// The embedded store seeded from YAML (credentials.seed), as an operator without Redis
// would run it: the seeded pair and user work from the first request, with the built-in
// reference upstream answering for the seeded subject.

const PAIR = { key: 'ak_seeded_pair_01', secret: 'seeded-secret-0123456789abcdefghijklmn' };
const USER = { username: 'carol@example.com', password: 'carol-password-1' };
const SUBJECT = 'subject-carol';
const ACCOUNTS = {
  result: 'success',
  status: 200,
  meta: { count: 2, limit: 1000, order: 'desc', last_id: 4 },
  data: [
    { id: 9, name: 'Carol margin', currency: 'GBP' },
    { id: 4, name: 'Carol cash', currency: 'GBP' },
  ],
};

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let gateway: GatewayProcess;

beforeAll(async () => {
  const [secretHash, passwordHash] = await Promise.all([
    bcrypt.hash(PAIR.secret, TEST_BCRYPT_COST),
    bcrypt.hash(USER.password, TEST_BCRYPT_COST),
  ]);
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: 'builtin',
      config: {
        credentials: {
          seed: {
            keys: [{ key: PAIR.key, secretHash, subject: SUBJECT, label: 'from YAML' }],
            users: [{ username: USER.username, passwordHash, subject: SUBJECT }],
          },
        },
        referenceUpstream: {
          accounts: {
            [SUBJECT]: [
              { id: 4, name: 'Carol cash', currency: 'GBP' },
              { id: 9, name: 'Carol margin', currency: 'GBP' },
            ],
          },
        },
        keys: { lastUsedIntervalSec: 0 },
        logging: { level: 'info' },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
});

describe('a gateway on the memory store seeded from YAML', () => {
  it('answers 200 with the subject’s accounts for the seeded pair', async () => {
    const res = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: basicHeader(PAIR.key, PAIR.secret) },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(ACCOUNTS);
  });

  it('answers 401 invalid_credentials for the seeded key with another secret', async () => {
    const res = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: basicHeader(PAIR.key, `${PAIR.secret}x`) },
    });
    expectGatewayError(await fromFetch(res), 'invalid_credentials');
  });

  it('lists the seeded pair on GET /keys without its hash', async () => {
    const res = await fetch(`${gateway.url}/keys`, {
      headers: { authorization: basicHeader(PAIR.key, PAIR.secret) },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain('$2b$');
    expect(JSON.parse(text)).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: PAIR.key },
      data: [
        {
          id: PAIR.key,
          key: PAIR.key,
          label: 'from YAML',
          status: 'active',
          created_at: expect.stringMatching(ISO) as unknown,
          expires_at: null,
          scopes: [],
          last_used_at: null,
          expiring_soon: false,
        },
      ],
    });
  });

  it('exchanges the seeded user’s password for a Bearer token that reaches the same accounts', async () => {
    const res = await fetch(`${gateway.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(USER),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { access_token: string }[] };
    // The default tokens.lifetimeSec: 900.
    expect(body).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: null },
      data: [
        {
          access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) as unknown,
          token_type: 'Bearer',
          expires_in: 900,
          expires_at: expect.stringMatching(
            /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/,
          ) as unknown,
        },
      ],
    });
    const [token] = body.data;

    const accounts = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: bearerHeader(token?.access_token ?? '') },
    });
    expect(accounts.status).toBe(200);
    expect(await accounts.json()).toEqual(ACCOUNTS);
  });

  it('refuses the seeded user with a wrong password', async () => {
    const res = await fetch(`${gateway.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: USER.username, password: 'not-her-password' }),
    });
    expectGatewayError(await fromFetch(res), 'invalid_credentials');
  });
});

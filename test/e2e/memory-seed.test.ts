import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { basicHeader, TEST_BCRYPT_COST } from '../support/seed-redis.js';

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

let gateway: GatewayProcess;

beforeAll(async () => {
  const [secretHash, passwordHash] = await Promise.all([
    bcrypt.hash(PAIR.secret, TEST_BCRYPT_COST),
    bcrypt.hash(USER.password, TEST_BCRYPT_COST),
  ]);
  gateway = await startGateway(`
admin: { port: 0 }
upstreams:
  accounts: { url: builtin }
credentials:
  store: memory
  bcryptCost: ${TEST_BCRYPT_COST}
  seed:
    keys:
      - { key: ${PAIR.key}, secretHash: "${secretHash}", subject: ${SUBJECT}, label: from YAML }
    users:
      - { username: "${USER.username}", passwordHash: "${passwordHash}", subject: ${SUBJECT} }
referenceUpstream:
  accounts:
    ${SUBJECT}:
      - { id: 4, name: Carol cash, currency: GBP }
      - { id: 9, name: Carol margin, currency: GBP }
logging: { level: info }
`);
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
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_credentials',
    );
  });

  it('lists the seeded pair on GET /keys without its hash', async () => {
    const res = await fetch(`${gateway.url}/keys`, {
      headers: { authorization: basicHeader(PAIR.key, PAIR.secret) },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain('$2b$');
    const body = JSON.parse(text) as { data: Record<string, unknown>[] };
    expect(body.data).toEqual([
      expect.objectContaining({ key: PAIR.key, label: 'from YAML', status: 'active' }),
    ]);
  });

  it('exchanges the seeded user’s password for a Bearer token that reaches the same accounts', async () => {
    const res = await fetch(`${gateway.url}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(USER),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      result: string;
      meta: { count: number };
      data: { access_token: string; token_type: string; expires_in: number }[];
    };
    expect(body.result).toBe('success');
    expect(body.meta.count).toBe(1);
    const [token] = body.data;
    expect(token).toMatchObject({ token_type: 'Bearer', expires_in: 900 });

    const accounts = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: `Bearer ${token?.access_token ?? ''}` },
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
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_credentials',
    );
  });
});

import bcrypt from 'bcrypt';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPE_ESCALATION_MESSAGE } from '../../src/errors/gateway-error.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';

// Scopes through the built gateway on the memory store: routes[].scopes and
// keys.requiredScopes answer 403 forbidden to an authenticated caller without them; seeded
// pairs and users carry scopes; a token issued for a user carries theirs; POST /keys hands on
// no scope the caller lacks.

const SUBJECT = 'subject-scoped';
const READER = { key: 'ak_scoped_reader', secret: 'reader-secret-0123456789abcdef' };
const MANAGER = { key: 'ak_scoped_manager', secret: 'manager-secret-0123456789abcdef' };
const NOBODY = { key: 'ak_scoped_nobody', secret: 'nobody-secret-0123456789abcdef' };
const USER = { username: 'sam@example.com', password: 'sam-password-1' };

let gateway: GatewayProcess;

beforeAll(async () => {
  const hash = (secret: string) => bcrypt.hash(secret, TEST_BCRYPT_COST);
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: 'builtin',
      config: {
        routes: [
          {
            name: 'accounts',
            paths: ['/accounts'],
            upstream: 'accounts',
            upstreamPath: '/accounts',
            scopes: ['accounts:read'],
          },
          { name: 'open', paths: ['/account'], upstream: 'accounts', upstreamPath: '/accounts' },
          {
            name: 'ledger',
            paths: ['/accounts/ledger'],
            upstream: 'accounts',
            upstreamPath: '/accounts',
            scopes: ['accounts:read', 'ledger'],
          },
        ],
        keys: { requiredScopes: ['keys'] },
        credentials: {
          seed: {
            keys: [
              {
                key: READER.key,
                secretHash: await hash(READER.secret),
                subject: SUBJECT,
                scopes: ['accounts:read'],
              },
              {
                key: MANAGER.key,
                secretHash: await hash(MANAGER.secret),
                subject: SUBJECT,
                scopes: ['accounts:read', 'keys'],
              },
              { key: NOBODY.key, secretHash: await hash(NOBODY.secret), subject: SUBJECT },
            ],
            users: [
              {
                username: USER.username,
                passwordHash: await hash(USER.password),
                subject: SUBJECT,
                scopes: ['accounts:read'],
              },
            ],
          },
        },
        logging: { level: 'info', requests: false },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
});

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

describe('routes[].scopes', () => {
  it('forwards a caller that holds every scope the route requires', async () => {
    expect((await send(gateway.url, '/accounts', { headers: basic(READER) })).status).toBe(200);
  });

  it('answers 403 forbidden to an authenticated caller without them, also from the cache', async () => {
    // Twice: the second answer comes from the verified-pair cache.
    for (let i = 0; i < 2; i += 1)
      expectGatewayError(
        await send(gateway.url, '/accounts', { headers: basic(NOBODY) }),
        'forbidden',
      );
  });

  it('still answers 401 first to a caller that is not authenticated', async () => {
    expectGatewayError(
      await send(gateway.url, '/accounts', {
        headers: basic({ ...READER, secret: 'wrong-secret-0123' }),
      }),
      'invalid_credentials',
    );
  });

  it('requires nothing of a route without scopes', async () => {
    expect((await send(gateway.url, '/account', { headers: basic(NOBODY) })).status).toBe(200);
  });

  it("lets a token issued for a user carry the user's scopes", async () => {
    const token = await issueToken(gateway.url, USER.username, USER.password);
    expect(decodeJwt(token).scope).toBe('accounts:read');
    const headers = { authorization: bearerHeader(token) };
    expect((await send(gateway.url, '/accounts', { headers })).status).toBe(200);
    // The user lacks `keys`: the key-management endpoints refuse the token.
    expectGatewayError(await send(gateway.url, '/keys', { headers }), 'forbidden');
  });

  it('answers a token without a route scope 403 with the RFC 6750 insufficient_scope challenge naming the scopes the route requires', async () => {
    const token = await issueToken(gateway.url, USER.username, USER.password);
    const headers = { authorization: bearerHeader(token) };
    const ledger = await send(gateway.url, '/accounts/ledger', { headers });
    expectGatewayError(ledger, 'forbidden');
    expect(ledger.headers['www-authenticate']).toBe(
      'Bearer realm="accounts-gateway", error="insufficient_scope", scope="accounts:read ledger"',
    );
    // keys.requiredScopes, on the gateway's own endpoints, alike.
    const keys = await send(gateway.url, '/keys', { headers });
    expectGatewayError(keys, 'forbidden');
    expect(keys.headers['www-authenticate']).toBe(
      'Bearer realm="accounts-gateway", error="insufficient_scope", scope="keys"',
    );
  });

  it('answers a Basic pair without a route scope 403 without a challenge (RFC 7617 has no such error)', async () => {
    for (const path of ['/accounts', '/accounts/ledger', '/keys']) {
      const answer = await send(gateway.url, path, { headers: basic(NOBODY) });
      expectGatewayError(answer, 'forbidden');
      expect(answer.headers['www-authenticate']).toBeUndefined();
    }
  });
});

describe('keys.requiredScopes', () => {
  it('guards GET and POST /keys and DELETE /keys/{key} with 403 forbidden', async () => {
    for (const [path, method] of [
      ['/keys', 'GET'],
      ['/keys', 'POST'],
      [`/keys/${READER.key}`, 'DELETE'],
    ] as const)
      expectGatewayError(
        await send(gateway.url, path, { method, headers: basic(READER) }),
        'forbidden',
      );
    expect((await send(gateway.url, '/keys', { headers: basic(MANAGER) })).status).toBe(200);
  });

  it("lists each pair's scopes, and makes pairs within the caller's only", async () => {
    const listed = await send(gateway.url, '/keys', { headers: basic(MANAGER) });
    const views = (listed.json as { data: { key: string; scopes: string[] }[] }).data;
    expect(Object.fromEntries(views.map((v) => [v.key, v.scopes]))).toMatchObject({
      [READER.key]: ['accounts:read'],
      [MANAGER.key]: ['accounts:read', 'keys'],
      [NOBODY.key]: [],
    });

    const post = (body: unknown) =>
      send(gateway.url, '/keys', {
        method: 'POST',
        headers: { ...JSON_TYPE, ...basic(MANAGER) },
        body: JSON.stringify(body),
      });
    const made = await post({ scopes: ['accounts:read'] });
    expect(made.status).toBe(201);
    const [view] = (made.json as { data: { key: string; secret: string; scopes: string[] }[] })
      .data;
    expect(view?.scopes).toEqual(['accounts:read']);
    // The new pair reads accounts but cannot manage keys.
    const pair = { key: view?.key ?? '', secret: view?.secret ?? '' };
    expect((await send(gateway.url, '/accounts', { headers: basic(pair) })).status).toBe(200);
    expectGatewayError(await send(gateway.url, '/keys', { headers: basic(pair) }), 'forbidden');

    expectGatewayError(await post({ scopes: ['keys', 'admin'] }), 'forbidden', {
      message: SCOPE_ESCALATION_MESSAGE,
    });
  });
});

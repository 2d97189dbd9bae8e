import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { BCRYPT_COMPARES, scrapeMetric } from '../support/scrape-metric.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// Two gateway processes on one Redis keep one set of lockout counters: failures through
// either add up, and the lock holds on both.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('lockout2');
const PAIR = { key: 'ak_shared_lockout', secret: 'shared-secret-0123456789abcdefghij' };
const DAVE = { username: 'dave', subject: 'subject-dave', password: 'dave-password-1' };

let upstream: EchoUpstream;
let gateways: [GatewayProcess, GatewayProcess];

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await Promise.all([
    seedKey(redisUrl, prefix, { ...PAIR, subject: 'shared' }),
    putUser(redisUrl, prefix, DAVE),
  ]);
  const yaml = gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: redisUrl, keyPrefix: prefix },
    config: {
      lockout: {
        initialLockSec: 60,
        basic: {
          keyAddress: { threshold: 4, maxLockSec: 60 },
          key: { threshold: 6, maxLockSec: 60 },
        },
        token: { username: { threshold: 5, maxLockSec: 60 } },
      },
      logging: { level: 'info', requests: false },
    },
  });
  gateways = await Promise.all([startGateway(yaml), startGateway(yaml)]);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await upstream?.close();
});

const get = (gateway: GatewayProcess, secret: string, from: string) =>
  send(gateway.url, '/accounts', {
    headers: { authorization: basicHeader(PAIR.key, secret) },
    from,
  });

const totalCompares = async (): Promise<number> =>
  (await Promise.all(gateways.map((g) => scrapeMetric(g, BCRYPT_COMPARES)))).reduce(
    (a, b) => a + b,
  );

describe('lockout shared by two gateway processes', () => {
  it('adds up failures through both to one (key, address) lock, then one key-wide lock', async () => {
    const [a, b] = gateways;
    const before = await totalCompares();
    // (key, address) threshold 4: two failures through each gateway lock 127.0.3.1.
    for (const gateway of [a, b, a, b])
      expect((await get(gateway, 'wrong', '127.0.3.1')).status).toBe(401);
    expect(await totalCompares()).toBe(before + 4);
    for (const gateway of [a, b]) {
      expectGatewayError(await get(gateway, PAIR.secret, '127.0.3.1'), 'rate_limited');
    }
    expect(await totalCompares()).toBe(before + 4);
    // Key-wide threshold 6: the 5th and 6th failures, from another address, one per gateway.
    expect((await get(b, 'wrong', '127.0.3.2')).status).toBe(401);
    expect((await get(a, 'wrong', '127.0.3.2')).status).toBe(401);
    for (const gateway of [a, b]) {
      expectGatewayError(await get(gateway, PAIR.secret, '127.0.3.3'), 'rate_limited');
    }
    expect(await totalCompares()).toBe(before + 6);
  });

  it('adds up failed password exchanges through both to one username-wide lock', async () => {
    const [a, b] = gateways;
    const login = (gateway: GatewayProcess, password: string, from: string) =>
      send(gateway.url, '/auth/token', {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify({ username: DAVE.username, password }),
        from,
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const gateway = i % 2 === 0 ? a : b;
      statuses.push((await login(gateway, 'wrong-password', `127.0.3.${10 + i}`)).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    expect((await login(a, DAVE.password, '127.0.3.20')).status).toBe(429);
    expect((await login(b, DAVE.password, '127.0.3.21')).status).toBe(429);
  });
});

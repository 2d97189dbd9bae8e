import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { startRedisGateway, type RedisGateway } from '../support/redis-gateway.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// Issue 13: an IPv6 client holds a /64, so counting single addresses let one client send 55
// wrong passwords from 2001:db8:aa:bb::1 … ::37 and never meet the address lockout (50).
// A trusted proxy range (127.0.0.0/8, loopback) lets the test send from many source
// addresses through X-Forwarded-For. Default lockout thresholds and networks throughout.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('networks');
const OWNER = { key: 'ak_networks_owner', secret: 'owner-secret-0123456789abcdefghij' };

let setup: RedisGateway;
let gateway: GatewayProcess;

beforeAll(async () => {
  await seedKey(redisUrl, prefix, { ...OWNER, subject: 'owner' });
  setup = await startRedisGateway(redisUrl, prefix, {
    server: { trustedProxies: ['127.0.0.0/8'] },
    rateLimits: { address: { requests: 100, periodSec: 3600 } },
    logging: { level: 'info', requests: false },
  });
  gateway = setup.gateway;
});

afterAll(() => setup?.close());

const login = (username: string, forwardedFor: string): Promise<HttpAnswer> =>
  send(gateway.url, '/auth/token', {
    method: 'POST',
    headers: { ...JSON_TYPE, 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ username, password: 'a-wrong-password' }),
  });

/** `2001:db8:<net>::<n>` for n = 1 … count, in hex as the issue wrote them. */
const addressesOf = (net: string, count: number) =>
  Array.from({ length: count }, (_, i) => `2001:db8:${net}::${(i + 1).toString(16)}`);

describe('client addresses counted by network', () => {
  it('locks out 55 wrong passwords from 55 addresses of one IPv6 /64 after 50, like one IPv4 address', async () => {
    const statuses: number[] = [];
    for (const [i, address] of addressesOf('aa:bb', 0x37).entries())
      statuses.push((await login(`spray${i}`, address)).status);
    expect(statuses).toEqual([...Array<number>(50).fill(401), ...Array<number>(5).fill(429)]);
    // One address counter for the whole /64, not one per address.
    expect(await setup.redis.keys(`${prefix}*lockout:token:address:*`)).toEqual([
      redisLayout(prefix).lockoutCounter({
        scope: 'token_address',
        id: '',
        network: '2001:db8:aa:bb::/64',
      }),
    ]);
    // Another /64 is another client.
    expect((await login('spray-elsewhere', '2001:db8:aa:bc::1')).status).toBe(401);
  });

  it('logs the client’s own address and the network counted', async () => {
    await login('logged-user', '2001:DB8:cc:dd:0::abcd');
    const line = await gateway.waitForLog('authentication failed', { username: 'logged-user' });
    expect(line).toMatchObject({
      scheme: 'token',
      client_address: '2001:db8:cc:dd::abcd',
      client_network: '2001:db8:cc:dd::/64',
    });
  });

  it('locks a Basic key out of a /64 after its (key, address) threshold, whichever address guesses', async () => {
    const statuses: number[] = [];
    for (const address of addressesOf('ee:ff', 11)) {
      const answer = await send(gateway.url, '/accounts', {
        headers: {
          authorization: basicHeader(OWNER.key, `guess-from-${address}`),
          'x-forwarded-for': address,
        },
      });
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
  });

  it('charges one address rate-limit bucket for every address of a /64', async () => {
    const jwks = (forwardedFor: string) =>
      send(gateway.url, '/.well-known/jwks.json', { headers: { 'x-forwarded-for': forwardedFor } });
    const answers = [
      await jwks('2001:db8:1:2::1'),
      await jwks('2001:db8:1:2:ffff::9'),
      await jwks('2001:db8:1:3::1'),
    ];
    expect(answers.map((a) => a.headers.ratelimit)).toEqual([
      '"address";r=99;t=36',
      '"address";r=98;t=72',
      '"address";r=99;t=36',
    ]);
  });

  it('counts a request whose X-Forwarded-For hop is not an IP address as the proxy’s own', async () => {
    const jwks = (forwardedFor: string) =>
      send(gateway.url, '/.well-known/jwks.json', {
        headers: { 'x-forwarded-for': forwardedFor },
        from: '127.0.7.7',
      });
    const first = await jwks('198.51.100.7:4711');
    const second = await jwks('garbage');
    const direct = await send(gateway.url, '/.well-known/jwks.json', { from: '127.0.7.7' });
    expect([first, second, direct].map((a) => a.headers.ratelimit)).toEqual([
      '"address";r=99;t=36',
      '"address";r=98;t=72',
      '"address";r=97;t=108',
    ]);
  });
});

describe('trusting every address', () => {
  const TRUSTS_ALL =
    'server.trustedProxies trusts every address: any client that reaches this port directly chooses the address its lockout and address rate limit count';

  it('is allowed, with a warning at start naming the ranges', async () => {
    const open = await startGateway(
      gatewayYaml({ config: { server: { trustedProxies: ['10.0.0.0/8', '0.0.0.0/0', '::/0'] } } }),
    );
    try {
      expect(await open.waitForLog(TRUSTS_ALL)).toMatchObject({
        level: 40,
        trustedProxies: ['0.0.0.0/0', '::/0'],
      });
    } finally {
      await open.stop();
    }
  });

  it('is not what a narrower range is told it does', () => {
    expect(gateway.logs.filter((line) => line.msg === TRUSTS_ALL)).toEqual([]);
  });
});

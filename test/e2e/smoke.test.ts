import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('smoke');
let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await seedKey(inject('redisUrl'), prefix, {
    key: 'ak_smoke',
    secret: 's3cret-smoke',
    subject: 'alice',
  });
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      config: { logging: { level: 'info' } },
    }),
  );
});

afterAll(async () => {
  await gateway.stop();
  await upstream.close();
});

describe('gateway smoke', () => {
  it('forwards a verified Basic request to the canonical upstream path', async () => {
    const res = await fetch(`${gateway.url}/account?b=2&a=1`, {
      headers: { authorization: basicHeader('ak_smoke', 's3cret-smoke') },
    });
    expect(res.status).toBe(200);
    expect(upstream.received.at(-1)?.url).toBe('/accounts?b=2&a=1');
    expect(upstream.received.at(-1)?.headers['x-auth-subject']).toBe('alice');
  });
});

describe('an upstream URL with a path', () => {
  it('prefixes the route path with it', async () => {
    const based = await startGateway(
      gatewayYaml({
        upstreamUrl: `${upstream.url}/base/`,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
      }),
    );
    try {
      const res = await fetch(`${based.url}/accounts/?q=1`, {
        headers: { authorization: basicHeader('ak_smoke', 's3cret-smoke') },
      });
      expect(res.status).toBe(200);
      expect(upstream.received.at(-1)?.url).toBe('/base/accounts?q=1');
    } finally {
      await based.stop();
    }
  });
});

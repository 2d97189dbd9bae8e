import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { BASIC_CHALLENGE } from '../support/expect-gateway-error.js';
import {
  forwardAuthGatewayYaml,
  LIMITED,
  NOBODY,
  READER,
  SUBJECT,
} from '../support/forward-auth-gateway.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import {
  CADDY,
  NGINX,
  proxyTestsRun,
  startCaddy,
  startNginx,
  type ExampleAddresses,
  type ProxyProcess,
} from '../support/proxy-process.js';
import { send } from '../support/send.js';

// A real nginx (auth_request) and a real Caddy (forward_auth), each run from the config file
// the README shows (config/forward-auth/), asking the built gateway about every request to a
// protected service (the echo upstream). What the client sees, and what the service receives.

const PROXIES = [
  { name: 'nginx', binary: NGINX, start: startNginx },
  { name: 'Caddy', binary: CADDY, start: startCaddy },
] as const;

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

describe.each(PROXIES)('forward auth behind $name', ({ binary, start }) => {
  const run = proxyTestsRun(binary);
  let service: EchoUpstream;
  let gateway: GatewayProcess;
  let proxy: ProxyProcess;

  beforeAll(async () => {
    if (!run) return;
    service = await startEchoUpstream();
    gateway = await startGateway(await forwardAuthGatewayYaml('builtin'));
    const addresses: ExampleAddresses = {
      gateway: `127.0.0.1:${gateway.port}`,
      service: service.url.slice('http://'.length),
    };
    proxy = await start(addresses);
  });

  afterAll(async () => {
    await proxy?.stop();
    await gateway?.stop();
    await service?.close();
  });

  /** The requests the service received during `action`. */
  async function reaching(action: () => Promise<unknown>) {
    const before = service.received.length;
    await action();
    return service.received.slice(before);
  }

  it.runIf(run)(
    'lets an allowed request reach the service with the X-Auth-* identity and without the credentials',
    async () => {
      let status = 0;
      const received = await reaching(async () => {
        ({ status } = await send(proxy.url, '/accounts?limit=5', { headers: basic(READER) }));
      });
      expect(status).toBe(200);
      expect(received).toHaveLength(1);
      expect(received[0]?.url).toBe('/accounts?limit=5');
      expect(received[0]?.headers).toMatchObject({
        'x-auth-subject': SUBJECT,
        'x-auth-method': 'basic',
        'x-auth-key': READER.key,
        'x-auth-scopes': 'accounts:read',
      });
      expect(received[0]?.headers.authorization).toBeUndefined();
    },
  );

  it.runIf(run)(
    "passes the original method, and replaces a client's own X-Auth-* headers",
    async () => {
      const received = await reaching(() =>
        send(proxy.url, '/items/7', {
          method: 'POST',
          headers: {
            ...basic(NOBODY),
            'x-auth-scopes': 'admin',
            'x-auth-subject': 'root',
            'x-auth-key': 'ak_someone_else',
          },
          body: '{}',
        }),
      );
      expect(received.map((request) => request.method)).toEqual(['POST']);
      expect(received[0]?.headers['x-auth-subject']).toBe(SUBJECT);
      // NOBODY holds no scope: the gateway sent no X-Auth-Scopes, and the client's is gone.
      expect(received[0]?.headers['x-auth-scopes'] ?? '').toBe('');
      expect(received[0]?.headers['x-auth-key']).toBe(NOBODY.key);
    },
  );

  it.runIf(run)(
    'answers 401 with the Basic challenge, for missing and unknown credentials',
    async () => {
      const received = await reaching(async () => {
        for (const headers of [
          {},
          basic({ key: 'ak_fwd_unknown', secret: 'x-0123456789abcdef' }),
        ]) {
          const answer = await send(proxy.url, '/accounts', { headers });
          expect(answer.status).toBe(401);
          expect(answer.headers['www-authenticate']).toContain(BASIC_CHALLENGE);
        }
      });
      expect(received).toEqual([]);
    },
  );

  it.runIf(run)('answers 403 when the credential lacks the route scope', async () => {
    const received = await reaching(async () => {
      expect((await send(proxy.url, '/accounts', { headers: basic(NOBODY) })).status).toBe(403);
    });
    expect(received).toEqual([]);
  });

  it.runIf(run)('answers 429 with Retry-After once the route rate limit is spent', async () => {
    expect((await send(proxy.url, '/limited', { headers: basic(LIMITED) })).status).toBe(200);
    const received = await reaching(async () => {
      const refused = await send(proxy.url, '/limited', { headers: basic(LIMITED) });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.json).toMatchObject({ status: 429, error: { code: 'rate_limited' } });
    });
    expect(received).toEqual([]);
  });

  it.runIf(run)('answers 404 for a path no route of the gateway covers', async () => {
    const answer = await send(proxy.url, '/admin', { headers: basic(READER) });
    expect(answer.status).toBe(404);
    expect(answer.json).toMatchObject({ status: 404, error: { code: 'not_found' } });
  });
});

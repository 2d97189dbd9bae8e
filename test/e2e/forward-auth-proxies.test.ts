import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BASIC_CHALLENGE,
  BEARER_CHALLENGE,
  BEARER_REJECTED,
  expectGatewayError,
} from '../support/expect-gateway-error.js';
import {
  forwardAuthGatewayYaml,
  LIMITED,
  NOBODY,
  READER,
  SUBJECT,
  TOKEN_SECRET,
} from '../support/forward-auth-gateway.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import {
  CADDY,
  NGINX,
  proxyTestsRun,
  startCaddy,
  startNginx,
  type CaddyProcess,
  type ExampleAddresses,
  type NginxProcess,
  type ProxyProcess,
} from '../support/proxy-process.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { listeningAddresses } from '../support/listening-addresses.js';
import { freePort } from '../support/redis-server.js';
import { scrapeMetric } from '../support/scrape-metric.js';
import { send } from '../support/send.js';

// A real nginx (auth_request) and a real Caddy (forward_auth), each run from the config file
// docs/forward-auth.md shows (config/forward-auth/), asking the built gateway about every request to a
// protected service (the echo upstream). What the client sees, and what the service receives.

/**
 * nginx before 1.23 (Debian 12 has 1.22) passes on only the first WWW-Authenticate of a
 * check's 401; later ones, and Caddy, pass on each.
 */
function nginxKeepsEveryChallenge(): boolean {
  const version = /nginx\/(\d+)\.(\d+)/.exec(
    spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr ?? '',
  );
  return version !== null && Number(version[1]) * 1000 + Number(version[2]) >= 1023;
}

const PROXIES = [
  { name: 'nginx', binary: NGINX, start: startNginx, everyChallenge: nginxKeepsEveryChallenge },
  { name: 'Caddy', binary: CADDY, start: startCaddy, everyChallenge: () => true },
] as const;

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

/** The protected service and the gateway, with `start`'s proxy in front of both. */
async function startBehind<P extends ProxyProcess>(
  start: (addresses: ExampleAddresses) => Promise<P>,
): Promise<{ service: EchoUpstream; gateway: GatewayProcess; proxy: P }> {
  const service = await startEchoUpstream();
  const gateway = await startGateway(await forwardAuthGatewayYaml('builtin'));
  const proxy = await start({
    gateway: `127.0.0.1:${gateway.port}`,
    service: service.url.slice('http://'.length),
  });
  return { service, gateway, proxy };
}

/** Stops what startBehind started (each part undefined when the tests did not run). */
async function stopAll(
  proxy: ProxyProcess | undefined,
  gateway: GatewayProcess | undefined,
  service: EchoUpstream | undefined,
): Promise<void> {
  await proxy?.stop();
  await gateway?.stop();
  await service?.close();
}

describe.each(PROXIES)('forward auth behind $name', ({ name, binary, start, everyChallenge }) => {
  const run = proxyTestsRun(binary);
  const keepsEveryChallenge = run && everyChallenge();
  let service: EchoUpstream;
  let gateway: GatewayProcess;
  let proxy: ProxyProcess;

  beforeAll(async () => {
    if (run) ({ service, gateway, proxy } = await startBehind<ProxyProcess>(start));
  });

  afterAll(() => stopAll(proxy, gateway, service));

  // docs/forward-auth.md says so beside the Caddyfile: Caddy 2.6 (Debian 12's) has no
  // `persist_config off`, so the copy is told rather than avoided.
  it.runIf(run && name === 'Caddy')(
    'saves the config it loaded where docs/forward-auth.md says: caddy/autosave.json under XDG_CONFIG_HOME',
    async () => {
      await proxy.untilOutput('serving initial configuration');
      expect(existsSync(join((proxy as CaddyProcess).home, 'caddy', 'autosave.json'))).toBe(true);
    },
  );

  // An example copied as it is must not open the protected service to the network: a site
  // address names the Host Caddy answers, not the interface it listens on.
  it.runIf(run)('listens on loopback only, as run from its example config', () => {
    const addresses = listeningAddresses(Number(new URL(proxy.url).port));
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.filter((address) => address !== '127.0.0.1' && address !== '::1')).toEqual([]);
  });

  /** The 401's challenges are the gateway's, in its order (only its first, see above). */
  function expectChallenges(answer: HttpAnswer, sent: readonly string[]): void {
    const header = answer.headers['www-authenticate'];
    const challenges = typeof header === 'string' ? [header] : (header ?? []);
    expect(challenges).toEqual(keepsEveryChallenge ? sent : sent.slice(0, 1));
  }

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

  // PHP (HTTP_X_AUTH_SUBJECT), WSGI and Django read `_` and `-` as one: an underscore
  // spelling beside the real header would win or be read instead of it.
  it.runIf(run)(
    "never lets a client's underscore spellings of X-Auth-* (X_Auth_Subject) reach the service",
    async () => {
      const received = await reaching(() =>
        send(proxy.url, '/accounts', {
          headers: {
            ...basic(READER),
            X_Auth_Subject: 'root',
            'X-Auth_Scopes': 'admin',
            x_auth_key: 'ak_someone_else',
            X_AUTH_METHOD: 'bearer',
          },
        }),
      );
      expect(received).toHaveLength(1);
      const names = Object.keys(received[0]?.headers ?? {});
      const identityNames = names.filter((name) => name.replaceAll('_', '-').startsWith('x-auth-'));
      expect(identityNames.sort()).toEqual([
        'x-auth-key',
        'x-auth-method',
        'x-auth-scopes',
        'x-auth-subject',
      ]);
      expect(received[0]?.headers['x-auth-subject']).toBe(SUBJECT);
    },
  );

  it.runIf(run)(
    'answers 401 in the error envelope with the challenges, for missing and unknown credentials',
    async () => {
      const received = await reaching(async () => {
        for (const [headers, code] of [
          [{}, 'missing_credentials'],
          [basic({ key: 'ak_fwd_unknown', secret: 'x-0123456789abcdef' }), 'invalid_credentials'],
        ] as const) {
          const answer = await send(proxy.url, '/accounts', { headers });
          expectGatewayError(answer, code);
          expectChallenges(answer, [BASIC_CHALLENGE, BEARER_CHALLENGE]);
        }
      });
      expect(received).toEqual([]);
    },
  );

  it.runIf(run)(
    'answers 401 invalid_token with the rejected-token challenge for a bad bearer token',
    async () => {
      const answer = await send(proxy.url, '/tokens-only', {
        headers: { authorization: 'Bearer not.a.token' },
      });
      expectGatewayError(answer, 'invalid_token');
      expectChallenges(answer, [BEARER_REJECTED]);
    },
  );

  it.runIf(run)(
    'answers 401 token_expired, as the gateway said, for an expired token',
    async () => {
      const expired = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(SUBJECT)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
        .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
        .sign(new TextEncoder().encode(TOKEN_SECRET));
      const answer = await send(proxy.url, '/tokens-only', {
        headers: { authorization: `Bearer ${expired}` },
      });
      expectGatewayError(answer, 'token_expired');
    },
  );

  it.runIf(run)(
    'answers 403 in the error envelope when the credential lacks the route scope',
    async () => {
      const received = await reaching(async () => {
        expectGatewayError(
          await send(proxy.url, '/accounts', { headers: basic(NOBODY) }),
          'forbidden',
        );
      });
      expect(received).toEqual([]);
    },
  );

  it.runIf(run)('answers 405 with the Allow header of the route', async () => {
    const answer = await send(proxy.url, '/items/7', { method: 'DELETE', headers: basic(NOBODY) });
    expectGatewayError(answer, 'method_not_allowed');
    expect(answer.headers.allow).toBe('GET, POST');
  });

  it.runIf(run)('answers 429 with Retry-After once the route rate limit is spent', async () => {
    expect((await send(proxy.url, '/limited', { headers: basic(LIMITED) })).status).toBe(200);
    const received = await reaching(async () => {
      const refused = await send(proxy.url, '/limited', { headers: basic(LIMITED) });
      expectGatewayError(refused, 'rate_limited');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // The IETF headers the gateway set on its 429 (draft-ietf-httpapi-ratelimit-headers).
      expect(refused.headers['ratelimit-policy']).toMatch(/^"[^"]+";q=\d+;w=\d+/);
      expect(refused.headers.ratelimit).toMatch(/^"[^"]+";r=0;t=\d+$/);
    });
    expect(received).toEqual([]);
  });

  it.runIf(run)(
    'answers 400 invalid_path for a spelling of the path an upstream would normalize',
    async () => {
      const received = await reaching(async () => {
        for (const uri of ['/items//7', '/items/%37', '/items/7;x'])
          expectGatewayError(
            await send(proxy.url, uri, { headers: basic(READER) }),
            'invalid_path',
          );
      });
      expect(received).toEqual([]);
    },
  );

  it.runIf(run)('answers 404 for a path no route of the gateway covers', async () => {
    const answer = await send(proxy.url, '/admin', { headers: basic(READER) });
    expectGatewayError(answer, 'not_found');
  });
});

describe('forward auth behind nginx with the allow cache (nginx-cache.conf)', () => {
  const run = proxyTestsRun(NGINX);
  let service: EchoUpstream;
  let gateway: GatewayProcess;
  let nginx: NginxProcess;

  beforeAll(async () => {
    if (run)
      ({
        service,
        gateway,
        proxy: nginx,
      } = await startBehind((addresses) => startNginx(addresses, 'nginx-cache.conf')));
  });

  afterAll(() => stopAll(nginx, gateway, service));

  /** How many checks the gateway answered for `route` with `status` during `action`. */
  async function checks(route: string, status: number, action: () => Promise<unknown>) {
    const series = `gateway_requests_total{route="forward-auth:${route}",status="${status}",source="gateway"}`;
    const before = await scrapeMetric(gateway, series);
    await action();
    return (await scrapeMetric(gateway, series)) - before;
  }

  it.runIf(run)(
    'lets the same credentials, method and URI on again without asking the gateway, with the identity',
    async () => {
      const asked = await checks('accounts', 200, async () => {
        for (let i = 0; i < 3; i++) {
          const answer = await send(nginx.url, '/accounts?cached', { headers: basic(READER) });
          expect(answer.status).toBe(200);
        }
      });
      expect(asked).toBe(1);
      expect(service.received.slice(-3).map((request) => request.headers['x-auth-key'])).toEqual([
        READER.key,
        READER.key,
        READER.key,
      ]);
    },
  );

  it.runIf(run)('asks the gateway again for other credentials, method or URI', async () => {
    await send(nginx.url, '/items/1', { headers: basic(READER) });
    const asked = await checks('items', 200, async () => {
      for (const [method, path, pair] of [
        ['GET', '/items/1', NOBODY],
        ['POST', '/items/1', READER],
        ['GET', '/items/2', READER],
      ] as const)
        expect((await send(nginx.url, path, { method, headers: basic(pair) })).status).toBe(200);
    });
    expect(asked).toBe(3);
  });

  it.runIf(run)(
    'never keeps a refusal: a wrong secret after a good one is asked each time',
    async () => {
      await send(nginx.url, '/accounts?refused', { headers: basic(READER) });
      const wrong = basic({ ...READER, secret: `${READER.secret}-wrong` });
      const asked = await checks('accounts', 401, async () => {
        for (let i = 0; i < 2; i++)
          expectGatewayError(
            await send(nginx.url, '/accounts?refused', { headers: wrong }),
            'invalid_credentials',
          );
      });
      expect(asked).toBe(2);
    },
  );

  it.runIf(run)('keeps its cache, which holds the Authorization, readable by its user only', () => {
    expect(statSync(nginx.cacheDir).mode & 0o777).toBe(0o700);
  });
});

describe('forward auth behind nginx with the gateway down', () => {
  const run = proxyTestsRun(NGINX);
  let service: EchoUpstream | undefined;
  let nginx: NginxProcess | undefined;

  beforeAll(async () => {
    if (!run) return;
    service = await startEchoUpstream();
    // A port nothing listens on: the check's connection is refused.
    nginx = await startNginx({
      gateway: `127.0.0.1:${await freePort()}`,
      service: service.url.slice('http://'.length),
    });
  });

  afterAll(() => stopAll(nginx, undefined, service));

  it.runIf(run)(
    "answers 503 credential_store_unavailable with nginx's own request id in header and body",
    async () => {
      const answer = await send(nginx?.url ?? '', '/accounts', { headers: basic(READER) });
      const requestId = answer.headers['x-request-id'];
      // nginx's $request_id: 16 random bytes in hex.
      expect(requestId).toMatch(/^[0-9a-f]{32}$/);
      expectGatewayError(answer, 'credential_store_unavailable', { requestId: String(requestId) });
      expect(service?.received).toEqual([]);
    },
  );
});

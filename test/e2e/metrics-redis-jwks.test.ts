import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { bearerHeader } from '../support/basic-header.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// The Redis connection and JWKS families (issue 16 point 2) from the built gateway with
// `--workers 2`: each appears once on the set's admin port, combined across the workers by
// its own rule (the connection gauge by the minimum, never a sum of the workers' 1s).

const ISSUER = 'https://issuer.example';

let gateway: GatewayProcess | undefined;
let jwks: Server | undefined;
afterAll(async () => {
  await gateway?.stop();
  jwks?.closeAllConnections();
  jwks?.close();
});

describe('Redis connection and JWKS metrics, --workers 2', () => {
  it('show each family once, combined across the workers', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const keySet = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] });
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(keySet),
    );
    jwks = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const redisUrl = inject('redisUrl');
    const g = await startGateway(
      gatewayYaml({
        upstreamUrl: 'builtin',
        redis: { url: redisUrl, keyPrefix: uniquePrefix('statemetrics') },
        config: {
          auth: {
            bearer: {
              issuers: [
                {
                  name: 'remote',
                  algorithms: ['ES256'],
                  issuer: ISSUER,
                  jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
                },
              ],
            },
          },
          logging: { level: 'info' },
        },
      }),
      ['--workers', '2'],
    );
    gateway = g;
    // A worker listens once its store connection has settled (connected here).
    await untilLogs(g, 'both workers listening', (line) => line.msg === 'worker listening', 2);
    const nowSec = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setSubject('subject-state')
      .setIssuedAt(nowSec)
      .setExpirationTime(nowSec + 3600)
      .sign(privateKey);
    const res = await send(g.url, '/accounts', { headers: { authorization: bearerHeader(token) } });
    expect(res.status).toBe(200);

    const text = await (await fetch(`${g.adminUrl ?? ''}/metrics`)).text();
    const lines = (family: string): string[] =>
      text.split('\n').filter((line) => line.startsWith(`${family}{`));
    const node = new URL(redisUrl).host;
    expect(lines('gateway_redis_connection_up')).toEqual([
      `gateway_redis_connection_up{node="${node}",role="standalone"} 1`,
    ]);
    // The one worker that served the request fetched the key set; the sum is its count.
    expect(lines('gateway_jwks_fetches_total')).toEqual([
      `gateway_jwks_fetches_total{issuer="${ISSUER}"} 1`,
    ]);
    expect(lines('gateway_jwks_fetch_failures_total')).toEqual([
      `gateway_jwks_fetch_failures_total{issuer="${ISSUER}"} 0`,
    ]);
    const age = lines('gateway_jwks_key_set_age_seconds');
    expect(age).toHaveLength(1);
    expect(age[0]).toMatch(
      new RegExp(`^gateway_jwks_key_set_age_seconds\\{issuer="${ISSUER}"\\} [0-9.e-]+$`),
    );
    expect(text).toContain('# TYPE gateway_redis_connection_up gauge');
    expect(text).toContain('# TYPE gateway_jwks_fetches_total counter');
  });
});

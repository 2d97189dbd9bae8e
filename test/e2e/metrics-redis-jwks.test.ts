import { afterAll, describe, expect, inject, it } from 'vitest';
import { bearerHeader } from '../support/basic-header.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { startJwksIssuer, type JwksIssuer } from '../support/jwks-issuer.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// The Redis connection and JWKS families (issue 16 point 2) from the built gateway with
// `--workers 2`: each appears once on the set's admin port, combined across the workers by
// its own rule (the connection gauge by the minimum, never a sum of the workers' 1s).

let gateway: GatewayProcess | undefined;
let issuer: JwksIssuer | undefined;
afterAll(async () => {
  await gateway?.stop();
  await issuer?.close();
});

describe('Redis connection and JWKS metrics, --workers 2', () => {
  it('show each family once, combined across the workers', async () => {
    const jwks = await startJwksIssuer();
    issuer = jwks;
    const redisUrl = inject('redisUrl');
    const g = await startGateway(
      gatewayYaml({
        upstreamUrl: 'builtin',
        redis: { url: redisUrl, keyPrefix: uniquePrefix('statemetrics') },
        config: {
          auth: { bearer: { issuers: [jwks.entry()] } },
          logging: { level: 'info' },
        },
      }),
      ['--workers', '2'],
    );
    gateway = g;
    // A worker listens once its store connection has settled (connected here).
    await untilLogs(g, 'both workers listening', (line) => line.msg === 'worker listening', 2);
    const res = await send(g.url, '/accounts', {
      headers: { authorization: bearerHeader(await jwks.token('k1')) },
    });
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
      `gateway_jwks_fetches_total{issuer="${jwks.issuer}"} 1`,
    ]);
    expect(lines('gateway_jwks_fetch_failures_total')).toEqual([
      `gateway_jwks_fetch_failures_total{issuer="${jwks.issuer}"} 0`,
    ]);
    const age = lines('gateway_jwks_key_set_age_seconds');
    expect(age).toHaveLength(1);
    expect(age[0]).toMatch(
      new RegExp(`^gateway_jwks_key_set_age_seconds\\{issuer="${jwks.issuer}"\\} [0-9.e-]+$`),
    );
    expect(text).toContain('# TYPE gateway_redis_connection_up gauge');
    expect(text).toContain('# TYPE gateway_jwks_fetches_total counter');
  });
});

import { readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import { freePort } from '../support/redis-server.js';
import { sample } from '../support/scrape-metric.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// The metric families operators graph (issue 16), each moved by the traffic that should move
// it, in one process and across `--workers 2`. Every request of a test rides one keep-alive
// connection, so one worker serves them all and its caches see every pair and token.

const PAIRS = [
  { key: 'ak_metrics_pair_a', secret: 'metrics-secret-a-0123456789abcdef' },
  { key: 'ak_metrics_pair_b', secret: 'metrics-secret-b-0123456789abcdef' },
] as const;
const USER = { username: 'mia@example.com', password: 'mia-password-1' };
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

let gateway: GatewayProcess | undefined;
let agent: Agent | undefined;
afterEach(async () => {
  agent?.destroy();
  await gateway?.stop();
});

async function metricsText(g: GatewayProcess): Promise<string> {
  const res = await fetch(`${g.adminUrl ?? ''}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** A gateway on Redis (workers need it) with both pairs and the user in a store of its own. */
async function seededYaml(extra: GatewayConfigInput = {}): Promise<string> {
  const redisUrl = inject('redisUrl');
  const keyPrefix = uniquePrefix('metrics');
  await Promise.all([
    ...PAIRS.map((pair) => seedKey(redisUrl, keyPrefix, { ...pair, subject: 'subject-mia' })),
    putUser(redisUrl, keyPrefix, { ...USER, subject: 'subject-mia' }),
  ]);
  return gatewayYaml({
    upstreamUrl: 'builtin',
    redis: { url: redisUrl, keyPrefix },
    config: {
      // One entry each: a second pair or token pushes the first out (an eviction).
      auth: { basic: { cache: { maxEntries: 1 } }, bearer: { cache: { maxEntries: 1 } } },
      keys: { lastUsedIntervalSec: 0 },
      logging: { level: 'info' },
      ...extra,
    },
  });
}

describe.each([
  {
    setup: 'one process',
    args: [] as string[],
    processes: 1,
    applied: 'configuration reloaded',
    refused: 'configuration not reloaded; the running one stays',
  },
  {
    setup: '--workers 2',
    args: ['--workers', '2'],
    processes: 2,
    applied: 'configuration validated; sent to every worker',
    refused: 'configuration not reloaded; every worker keeps the running one',
  },
])('metric families, $setup', ({ args, processes, applied, refused }) => {
  it('counts cache hits, misses, evictions, entries, auth successes, open connections, reloads and the build', async () => {
    gateway = await startGateway(await seededYaml(), args);
    const g = gateway;
    // Each process empties its caches once its revocation subscription stands: traffic
    // before that would be cached, then flushed.
    await untilLogs(
      g,
      'revocations subscribed',
      (l) => l.msg === 'revocations subscribed',
      processes,
    );
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const on = { agent };
    const get = async (authorization: string): Promise<void> => {
      const res = await send(g.url, '/accounts', { ...on, headers: { authorization } });
      expect(res.status).toBe(200);
    };
    const token = async (): Promise<string> => {
      const res = await send(g.url, '/auth/token', {
        ...on,
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify(USER),
      });
      expect(res.status).toBe(200);
      return (res.json as { data: [{ access_token: string }] }).data[0].access_token;
    };
    const [a, b] = PAIRS.map((p) => basicHeader(p.key, p.secret)) as [string, string];
    await get(a); // miss, verified, cached
    await get(a); // hit
    await get(b); // miss; caching it evicts a
    const [first, second] = [await token(), await token()];
    await get(bearerHeader(first)); // miss
    await get(bearerHeader(first)); // hit
    await get(bearerHeader(second)); // miss; caching it evicts the first

    // Read before the reload: a reload starts the caches of its configuration empty.
    const traffic = await metricsText(g);
    const started = sample(traffic, 'gateway_config_last_reload_success_timestamp_seconds');
    g.child.kill('SIGHUP');
    await g.waitForLog(applied);
    writeFileSync(g.configFile, 'server: [not, a, mapping]\n');
    g.child.kill('SIGHUP');
    await g.waitForLog(refused);
    const text = await metricsText(g);

    for (const method of ['basic', 'bearer']) {
      const of = (family: string): number => sample(traffic, `${family}{method="${method}"}`);
      expect(of('gateway_credential_cache_hits_total'), method).toBe(1);
      expect(of('gateway_credential_cache_misses_total'), method).toBeGreaterThanOrEqual(2);
      expect(of('gateway_credential_cache_evictions_total'), method).toBe(1);
      expect(of('gateway_credential_cache_entries'), method).toBe(1);
      expect(of('gateway_auth_successes_total'), method).toBe(3);
    }
    // The agent's connection is still open.
    expect(sample(traffic, 'gateway_open_connections')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'gateway_config_reloads_total{outcome="applied"}')).toBe(1);
    expect(sample(text, 'gateway_config_reloads_total{outcome="refused"}')).toBe(1);
    expect(started).toBeGreaterThan(0);
    expect(sample(text, 'gateway_config_last_reload_success_timestamp_seconds')).toBeGreaterThan(
      started,
    );
    // Without server.tls, no certificate: a not-after of 0 would read as expired in 1970.
    expect(text).not.toMatch(/gateway_tls_/);
    // One series at 1, never a sum over workers.
    const info = text.split('\n').filter((line) => line.startsWith('gateway_build_info{'));
    expect(info).toEqual([
      `gateway_build_info{version="${VERSION}",node="${process.versions.node}"} 1`,
    ]);
  });

  it('times upstream responses, counts upstream errors by kind and tells the source of each status', async () => {
    gateway = await startGateway(
      await seededYaml({
        upstreams: {
          accounts: { url: 'builtin' },
          // Nothing listens there.
          down: { url: `http://127.0.0.1:${await freePort()}` },
        },
        routes: [
          {
            name: 'accounts',
            paths: ['/accounts'],
            upstream: 'accounts',
            upstreamPath: '/accounts',
          },
          { name: 'down', paths: ['/down'], upstream: 'down', upstreamPath: '/down' },
        ],
      }),
      args,
    );
    const g = gateway;
    const on = new Agent({ keepAlive: true, maxSockets: 1 });
    agent = on;
    const authorization = basicHeader(PAIRS[0].key, PAIRS[0].secret);
    const statusOf = async (path: string, auth = authorization): Promise<number> =>
      (await send(g.url, path, { agent: on, headers: { authorization: auth } })).status;
    expect(await statusOf('/accounts')).toBe(200);
    expect(await statusOf('/accounts')).toBe(200);
    expect(await statusOf('/down')).toBe(502);
    expect(await statusOf('/accounts', basicHeader(PAIRS[0].key, 'wrong-secret-000'))).toBe(401);

    const text = await metricsText(g);
    expect(
      [
        'gateway_upstream_request_duration_seconds_count{upstream="accounts"}',
        'gateway_upstream_request_duration_seconds_bucket{le="+Inf",upstream="accounts"}',
        'gateway_upstream_errors_total{upstream="down",kind="connect_refused"}',
        'gateway_upstream_errors_total{upstream="accounts",kind="connect_refused"}',
        'gateway_requests_total{route="accounts",status="200",source="upstream"}',
        'gateway_requests_total{route="down",status="502",source="gateway"}',
        'gateway_requests_total{route="accounts",status="401",source="gateway"}',
      ].map((series) => sample(text, series)),
    ).toEqual([2, 2, 1, 0, 2, 1, 1]);
    expect(
      sample(text, 'gateway_upstream_request_duration_seconds_sum{upstream="accounts"}'),
    ).toBeGreaterThan(0);
  });
});

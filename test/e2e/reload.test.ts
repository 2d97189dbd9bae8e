import { Agent, request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { BCRYPT_COMPARES, scrapeMetric } from '../support/scrape-metric.js';
import { issueToken } from '../support/send.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';

const prefix = uniquePrefix('reload');
const pair = { key: 'ak_reload', secret: 'reload-secret-0123456789', subject: 'rita' };
let upstream: EchoUpstream;
let gateway: GatewayProcess;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function configYaml(upstreamPath: string, paths: string[], lifetimeSec = 900): string {
  return gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: inject('redisUrl'), keyPrefix: prefix },
    config: {
      routes: [{ name: 'accounts', paths, upstream: 'accounts', upstreamPath }],
      tokens: { lifetimeSec },
    },
  });
}

/** One request on the shared keep-alive agent; `reused` says whether the socket was reused. */
function get(
  path: string,
  authorization = basicHeader(pair.key, pair.secret),
): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}${path}`, { agent, headers: { authorization } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await seedKey(inject('redisUrl'), prefix, pair);
  gateway = await startGateway(configYaml('/accounts', ['/accounts']));
});

afterAll(async () => {
  agent.destroy();
  await gateway.stop();
  await upstream.close();
});

describe('SIGHUP', () => {
  it('applies a new route table on the next request without dropping the open connection', async () => {
    expect((await get('/accounts?x=1')).status).toBe(200);
    expect(upstream.received.at(-1)?.url).toBe('/accounts?x=1');
    expect((await get('/acct')).status).toBe(404);

    writeFileSync(gateway.configFile, configYaml('/v2/accounts', ['/accounts', '/acct']));
    gateway.child.kill('SIGHUP');
    await gateway.waitForLog('configuration reloaded');

    const after = await get('/accounts?x=2');
    expect(after).toEqual({ status: 200, reused: true });
    expect(upstream.received.at(-1)?.url).toBe('/v2/accounts?x=2');
    expect((await get('/acct')).status).toBe(200);
  });

  it('keeps the running configuration and logs the problems when the new file is invalid', async () => {
    writeFileSync(gateway.configFile, `${configYaml('/v3/accounts', ['/accounts'])}bogus: true\n`);
    gateway.child.kill('SIGHUP');
    const refused = await gateway.waitForLog('configuration not reloaded; the running one stays');
    expect(refused.problems).toEqual(['(root): unknown key bogus']);

    expect((await get('/accounts')).status).toBe(200);
    expect(upstream.received.at(-1)?.url).toBe('/v2/accounts');
  });

  it('keeps the signing key it generated at start when a reload changes the token settings', async () => {
    await putUser(inject('redisUrl'), prefix, {
      username: 'rolf',
      subject: pair.subject,
      password: 'rolf-password-1',
    });
    const token = await issueToken(gateway.url, 'rolf', 'rolf-password-1');
    expect((await get('/accounts', bearerHeader(token))).status).toBe(200);

    const reloadedBefore = gateway.logs.filter((l) => l.msg === 'configuration reloaded').length;
    writeFileSync(gateway.configFile, configYaml('/v2/accounts', ['/accounts'], 600));
    gateway.child.kill('SIGHUP');
    await untilLogs(
      gateway,
      'the second reload',
      (line) => line.msg === 'configuration reloaded',
      reloadedBefore + 1,
    );

    // A new key would void every token issued so far.
    expect((await get('/accounts', bearerHeader(token))).status).toBe(200);
    const warnings = gateway.logs.filter((l) => String(l.msg).startsWith('tokens are signed'));
    expect(warnings).toHaveLength(1);
  });
});

describe('SIGHUP and the verified caches', () => {
  /** Writes `yaml`, sends SIGHUP, and resolves with the reload's log line. */
  async function reload(yaml: string): Promise<Record<string, unknown>> {
    const before = gateway.logs.filter((l) => l.msg === 'configuration reloaded').length;
    writeFileSync(gateway.configFile, yaml);
    gateway.child.kill('SIGHUP');
    await untilLogs(
      gateway,
      'a reload',
      (line) => line.msg === 'configuration reloaded',
      before + 1,
    );
    return gateway.logs.filter((l) => l.msg === 'configuration reloaded')[before] ?? {};
  }
  const compares = () => scrapeMetric(gateway, BCRYPT_COMPARES);

  it('serves a cached pair without a new bcrypt run after a reload that changes no credential setting', async () => {
    expect((await get('/accounts')).status).toBe(200);
    const before = await compares();
    // The same file, then a change of routes only.
    for (const yaml of [
      configYaml('/v2/accounts', ['/accounts']),
      configYaml('/v3/accounts', ['/accounts', '/acct3']),
    ]) {
      expect(await reload(yaml)).toMatchObject({ basic_cache: 'kept', bearer_cache: 'kept' });
      expect((await get('/accounts')).status).toBe(200);
    }
    expect(await compares()).toBe(before);
  });

  it('empties the Basic cache when a setting it depends on changes, and checks the pair again', async () => {
    expect((await get('/accounts')).status).toBe(200);
    const before = await compares();
    const yaml = configYaml('/v3/accounts', ['/accounts']).concat(
      'auth:\n  basic:\n    cache:\n      ttlSec: 30\n',
    );
    expect(await reload(yaml)).toMatchObject({ basic_cache: 'emptied', bearer_cache: 'kept' });
    expect((await get('/accounts')).status).toBe(200);
    expect(await compares()).toBe(before + 1);
  });
});

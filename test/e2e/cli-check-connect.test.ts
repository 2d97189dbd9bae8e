import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayYamlOptions } from '../support/gateway-yaml.js';
import { freePort } from '../support/redis-server.js';
import { killCliChildren, runCli, type CliResult } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';

let echo: EchoUpstream;
/** An upstream that answers every request 404: an answer all the same. */
let notFound: Server;
let notFoundUrl: string;

beforeAll(async () => {
  echo = await startEchoUpstream();
  notFound = createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => notFound.listen(0, '127.0.0.1', resolve));
  notFoundUrl = `http://127.0.0.1:${(notFound.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await echo.close();
  notFound.closeAllConnections();
  await new Promise<void>((resolve) => notFound.close(() => resolve()));
});

afterEach(() => killCliChildren());

function checkConnect(options: GatewayYamlOptions): Promise<CliResult> {
  return runCli(['check', '--connect', '--config', writeConfig(gatewayYaml(options))]);
}

/** The lines after "configuration is valid", each with its elapsed time as N. */
function connectionLines(result: CliResult): string[] {
  return result.stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.replace(/ in \d+ ms$/, ' in N ms'))
    .sort();
}

describe('check --connect', () => {
  it('says Redis and every upstream answered (a 404 is an answer), and exits 0', async () => {
    const redisUrl = inject('redisUrl');
    const address = new URL(redisUrl);
    const result = await checkConnect({
      upstreamUrl: echo.url,
      redis: { url: redisUrl, keyPrefix: uniquePrefix('connect') },
      config: {
        upstreams: { billing: { url: `${notFoundUrl}/billing/` }, demo: { url: 'builtin' } },
      },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/: configuration is valid\n/);
    expect(connectionLines(result)).toEqual([
      `ok    Redis redis://${address.host}: answered PING in N ms`,
      `ok    upstream accounts ${echo.url}: answered HTTP 200 in N ms`,
      `ok    upstream billing ${notFoundUrl}: answered HTTP 404 in N ms`,
      'ok    upstream demo: builtin, runs inside the gateway',
    ]);
  });

  it('reaches an https upstream with its configured CA, and says so when the CA is not the right one', async () => {
    const ca = createTestCa();
    const other = createTestCa('Other CA');
    const served = ca.issue('upstream', { commonName: 'localhost', ...LOOPBACK });
    const secure = createHttpsServer({ cert: served.cert, key: served.key }, (_req, res) =>
      res.writeHead(204).end(),
    );
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(secure.address() as AddressInfo).port}`;
    try {
      const trusted = await checkConnect({
        config: { upstreams: { accounts: { url, tls: { caFile: ca.certFile } } } },
      });
      expect(connectionLines(trusted)).toEqual([
        'ok    credentials: memory store, inside the gateway',
        `ok    upstream accounts ${url}: answered HTTP 204 in N ms`,
      ]);
      const untrusted = await checkConnect({
        config: { upstreams: { accounts: { url, tls: { caFile: other.certFile } } } },
      });
      expect(untrusted.code).toBe(1);
      // Node's words, with the setting to change instead of Node's hint (--use-system-ca).
      expect(connectionLines(untrusted)).toContainEqual(
        `FAIL  upstream accounts ${url}: unable to verify the first certificate (name the CA it chains to in upstreams.accounts.tls.caFile)`,
      );
    } finally {
      secure.closeAllConnections();
      await new Promise<void>((resolve) => secure.close(() => resolve()));
      ca.remove();
      other.remove();
    }
  });

  it('says what did not answer and why, one line each, and exits 1', async () => {
    const [redisPort, upstreamPort] = [await freePort(), await freePort()];
    const result = await checkConnect({
      upstreamUrl: `http://127.0.0.1:${upstreamPort}`,
      redis: { url: `redis://:pw-4711@127.0.0.1:${redisPort}`, keyPrefix: uniquePrefix('connect') },
    });
    expect(result.code).toBe(1);
    expect(connectionLines(result)).toEqual([
      `FAIL  Redis redis://127.0.0.1:${redisPort}: unreachable, connection refused (connect ECONNREFUSED 127.0.0.1:${redisPort})`,
      `FAIL  upstream accounts http://127.0.0.1:${upstreamPort}: connect ECONNREFUSED 127.0.0.1:${upstreamPort}`,
    ]);
    expect(result.stderr).toBe('accounts-gateway: 2 of 2 did not answer\n');
    expect(`${result.stdout}${result.stderr}`).not.toContain('pw-4711');
  });

  it('tries nothing for the memory store and the built-in upstream', async () => {
    const result = await checkConnect({ upstreamUrl: 'builtin' });
    expect(result.code).toBe(0);
    expect(connectionLines(result)).toEqual([
      'ok    credentials: memory store, inside the gateway',
      'ok    upstream accounts: builtin, runs inside the gateway',
    ]);
  });
});

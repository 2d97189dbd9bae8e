import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { rawRequest } from '../support/raw-request.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// A proxied response speaks for the gateway's own connection with the client (RFC 9110
// §7.6.1): it advertises the gateway's keep-alive timeout, which the drain relies on (an
// idle connection is closed once idle past "the timeout the gateway advertised"), and none
// of the upstream's hop-by-hop fields. The upstream here advertises a timeout of its own and
// names a field in Connection, on each engine.

const prefix = uniquePrefix('proxied-keep-alive');
const KEY = 'ak_proxied_keep_alive';
const SECRET = 's3cret-proxied-keep-alive';
/** server.keepAliveTimeoutMs: advertised as `timeout=7`, unlike Node's default 5 s. */
const KEEP_ALIVE_MS = 7_000;

let upstream: EchoUpstream;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  upstream.respondWith((_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      connection: 'keep-alive, x-upstream-hop',
      'keep-alive': 'timeout=65, max=1000',
      'x-upstream-hop': 'for the gateway only',
    });
    res.end('{"result":"success"}');
  });
  await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
});

afterAll(async () => {
  await upstream?.close();
});

describe.each(['http-proxy-3', 'undici'] as const)('through the %s engine', (engine) => {
  let gateway: GatewayProcess;

  beforeAll(async () => {
    gateway = await startGateway(
      gatewayYaml({
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: {
          admin: { enabled: false },
          logging: { requests: false },
          server: { keepAliveTimeoutMs: KEEP_ALIVE_MS },
          upstreams: { accounts: { url: upstream.url, engine } },
        },
      }),
    );
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const get = (connection: string, untilClosed = false) =>
    rawRequest(
      gateway.port,
      'GET /accounts HTTP/1.1\r\nHost: gw\r\n' +
        `Authorization: ${basicHeader(KEY, SECRET)}\r\n${connection}\r\n`,
      { untilClosed },
    );

  it("advertises the gateway's keep-alive timeout and none of the upstream's hop-by-hop fields", async () => {
    const answer = await get('');
    expect([
      answer.status,
      answer.headers.connection,
      answer.headers['keep-alive'],
      answer.headers['x-upstream-hop'],
      answer.body,
    ]).toEqual([
      200,
      'keep-alive',
      `timeout=${KEEP_ALIVE_MS / 1000}`,
      undefined,
      '{"result":"success"}',
    ]);
  });

  it('answers a client that asked to close with Connection: close and closes', async () => {
    const answer = await get('Connection: close\r\n', true);
    expect([
      answer.status,
      answer.headers.connection,
      answer.headers['keep-alive'],
      answer.closedByServer,
    ]).toEqual([200, 'close', undefined, true]);
  });
});

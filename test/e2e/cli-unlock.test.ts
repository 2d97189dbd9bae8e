import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { requestLine } from '../support/gateway-logs.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { startRedisGateway, type RedisGateway } from '../support/redis-gateway.js';
import { freePort } from '../support/redis-server.js';
import { killCliChildren, runCli, type CliResult } from '../support/run-cli.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// `keys unlock` (issue 17) against gateway processes on the suite's Redis: a lock the gateway
// remembers in process (local-locks.ts) is lifted at once by the command, with no wait for its
// Retry-After, on a single gateway and on every worker of `serve --workers 2`. Each test locks
// its own pair (a verified pair is cached, and a cached pair skips the lockout) from its own
// addresses; only 127.0.0.1 is a trusted proxy, for the IPv6 /64 case through X-Forwarded-For.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('unlock');
const LOCK_SEC = 600;
/** Failures that lock a (key or username, address) counter, and an address counter. */
const ID_THRESHOLD = 3;
const ADDRESS_THRESHOLD = 4;
const LOCKOUT: GatewayConfigInput = {
  server: { trustedProxies: ['127.0.0.1'] },
  lockout: {
    initialLockSec: LOCK_SEC,
    basic: {
      keyAddress: { threshold: ID_THRESHOLD, maxLockSec: LOCK_SEC },
      address: { threshold: ADDRESS_THRESHOLD, maxLockSec: LOCK_SEC },
    },
    token: { usernameAddress: { threshold: ID_THRESHOLD, maxLockSec: LOCK_SEC } },
  },
  logging: { level: 'info', requests: true },
};

const pair = (name: string) => ({
  key: `ak_unlock_${name}`,
  secret: `${name}-secret-0123456789abcdef`,
  subject: `subject-${name}`,
});
const KEYED = pair('keyed');
const BY_ADDRESS = pair('by_address');
const BY_NETWORK = pair('by_network');
const ON_WORKERS = pair('on_workers');
const CAROL = { username: 'carol', subject: 'subject-carol', password: 'carol-password-1' };

let setup: RedisGateway;
let gateway: GatewayProcess;

beforeAll(async () => {
  await Promise.all([
    ...[KEYED, BY_ADDRESS, BY_NETWORK, ON_WORKERS].map((p) => seedKey(redisUrl, prefix, p)),
    putUser(redisUrl, prefix, CAROL),
  ]);
  setup = await startRedisGateway(redisUrl, prefix, LOCKOUT);
  gateway = setup.gateway;
  await untilSubscribers(redisUrl, prefix, 1);
});

afterEach(() => killCliChildren());

afterAll(() => setup?.close());

interface From {
  /** The local address to connect from. */
  readonly from?: string;
  /** An X-Forwarded-For the trusted 127.0.0.1 passes on. */
  readonly forwardedFor?: string;
}

const get = (
  target: GatewayProcess,
  key: string,
  secret: string,
  { from, forwardedFor }: From,
  requestId?: string,
): Promise<HttpAnswer> =>
  send(target.url, '/accounts', {
    headers: {
      authorization: basicHeader(key, secret),
      ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
      ...(requestId === undefined ? {} : { 'x-request-id': requestId }),
    },
    ...(from === undefined ? {} : { from }),
  });

const login = (password: string, from: string): Promise<HttpAnswer> =>
  send(gateway.url, '/auth/token', {
    method: 'POST',
    headers: JSON_TYPE,
    body: JSON.stringify({ username: CAROL.username, password }),
    from,
  });

const unlock = (args: string[], configFile = gateway.configFile): Promise<CliResult> =>
  runCli(['keys', 'unlock', ...args, '--config', configFile]);

/** Locks `p` from `from` by failing ID_THRESHOLD times; the right secret is then refused. */
async function lockPair(target: GatewayProcess, p: { key: string; secret: string }, from: From) {
  for (let i = 0; i < ID_THRESHOLD; i += 1)
    expectGatewayError(await get(target, p.key, `wrong-${i}`, from), 'invalid_credentials');
  // Refused by Redis's lock, which the gateway now remembers until its Retry-After.
  expectGatewayError(await get(target, p.key, p.secret, from), 'rate_limited');
}

/** Locks the network of `addresses` by failing ADDRESS_THRESHOLD times, each with another key. */
async function lockAddress(addresses: readonly From[]) {
  for (const [i, from] of addresses.entries())
    expectGatewayError(await get(gateway, `ak_unknown_${i}`, 'wrong', from), 'invalid_credentials');
}

const lockoutKeys = (pattern: string): Promise<string[]> =>
  setup.redis.keys(`${prefix}*lockout:${pattern}`);

describe('keys unlock on a running gateway', () => {
  it('lifts the lock of a key from every address, and the right secret is accepted at once', async () => {
    const from = { from: '127.0.4.1' };
    await lockPair(gateway, KEYED, from);
    expect(await unlock(['--key', KEYED.key])).toEqual({
      code: 0,
      stdout: `key ${KEYED.key}: lock lifted (2 counters cleared)\n`,
      stderr: '',
    });
    expect(await lockoutKeys(`basic:key*:${KEYED.key}*`)).toEqual([]);
    expect((await get(gateway, KEYED.key, KEYED.secret, from)).status).toBe(200);
  });

  it('lifts the lock of a username, and the right password is exchanged at once', async () => {
    const from = '127.0.4.2';
    for (let i = 0; i < ID_THRESHOLD; i += 1)
      expectGatewayError(await login(`wrong-password-${i}`, from), 'invalid_credentials');
    expectGatewayError(await login(CAROL.password, from), 'rate_limited');
    expect(await unlock(['--username', CAROL.username, '--json'])).toEqual({
      code: 0,
      stdout: `${JSON.stringify([
        { kind: 'username', username: 'carol', was_locked: true, counters_cleared: 2 },
      ])}\n`,
      stderr: '',
    });
    expect((await login(CAROL.password, from)).status).toBe(200);
  });

  it('lifts the lock of an IPv4 address, whatever key it failed with', async () => {
    const from = { from: '127.0.4.3' };
    await lockAddress(Array<From>(ADDRESS_THRESHOLD).fill(from));
    expectGatewayError(await get(gateway, BY_ADDRESS.key, BY_ADDRESS.secret, from), 'rate_limited');
    expect(await unlock(['--address', '127.0.4.3'])).toEqual({
      code: 0,
      stdout: 'address 127.0.4.3: lock lifted (1 counter cleared)\n',
      stderr: '',
    });
    expect((await get(gateway, BY_ADDRESS.key, BY_ADDRESS.secret, from)).status).toBe(200);
  });

  it('lifts the lock of the IPv6 /64 an address is counted in, named by any address of it', async () => {
    const of = (host: string): From => ({
      from: '127.0.0.1',
      forwardedFor: `2001:db8:0:7::${host}`,
    });
    await lockAddress(['1', '2', '3', '4'].map(of));
    expectGatewayError(
      await get(gateway, BY_NETWORK.key, BY_NETWORK.secret, of('99')),
      'rate_limited',
    );
    expect(await unlock(['--address', '2001:DB8:0:7:0:0:0:abcd'])).toEqual({
      code: 0,
      stdout:
        'address 2001:DB8:0:7:0:0:0:abcd (network 2001:db8:0:7::/64): lock lifted (1 counter cleared)\n',
      stderr: '',
    });
    expect((await get(gateway, BY_NETWORK.key, BY_NETWORK.secret, of('5'))).status).toBe(200);
  });

  it('says that nothing was locked, with exit 0, for a key, a username and an address', async () => {
    expect(
      await unlock(['--key', 'ak_never_seen', '--username', 'nobody', '--address', '192.0.2.7']),
    ).toEqual({
      code: 0,
      stdout:
        'key ak_never_seen: nothing was locked\nusername nobody: nothing was locked\naddress 192.0.2.7: nothing was locked\n',
      stderr: '',
    });
    expect(await unlock(['--address', '2001:db8:0:9::1', '--json'])).toEqual({
      code: 0,
      stdout: `${JSON.stringify([
        {
          kind: 'address',
          address: '2001:db8:0:9::1',
          network: '2001:db8:0:9::/64',
          was_locked: false,
          counters_cleared: 0,
        },
      ])}\n`,
      stderr: '',
    });
  });

  it('clears the failures of a counter that is not locked yet, and says so', async () => {
    const from = '127.0.4.5';
    expectGatewayError(
      await get(gateway, 'ak_failed_once', 'wrong', { from }),
      'invalid_credentials',
    );
    expect(await unlock(['--key', 'ak_failed_once', '--json'])).toEqual({
      code: 0,
      stdout: `${JSON.stringify([
        { kind: 'key', key: 'ak_failed_once', was_locked: false, counters_cleared: 2 },
      ])}\n`,
      stderr: '',
    });
    expect(await lockoutKeys('basic:key*:ak_failed_once*')).toEqual([]);
  });
});

describe('keys unlock refuses what it cannot do', () => {
  it.each([
    [[], 'name what to unlock: --key, --username or --address'],
    [['--address', '192.0.2.7:80'], '--address must be one IPv4 or IPv6 address, without a port'],
    [['--address', '2001:db8::/64'], '--address must be one IPv4 or IPv6 address, without a port'],
    [
      ['--key', 'ak:1'],
      '--key must be a key id as clients send it: 1-128 characters, without a colon, a space or a control character',
    ],
    // 100 emoji are 200 UTF-16 units: the gateway refuses such a key before counting it.
    [
      ['--key', '😀'.repeat(100)],
      '--key must be a key id as clients send it: 1-128 characters, without a colon, a space or a control character',
    ],
    [
      ['--key', 'ak_1', '--key', 'ak_2'],
      '--key may be given once; run the command again for another',
    ],
    [['--colour'], 'Unknown argument: colour'],
  ])('exits 2 with a sentence for %j', async (args, message) => {
    expect(await unlock(args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `accounts-gateway: ${message}\n`,
    });
  });

  it('exits 2 on the memory store, whose lockouts live in the gateway process', async () => {
    const memory = writeConfig(gatewayYaml({}));
    expect(await unlock(['--key', 'ak_1'], memory)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'accounts-gateway: credentials.store is memory: its lockouts live in the gateway process that counted them, which this command cannot reach; reload that gateway (SIGHUP) or restart it to lift them all, or pass --redis-url\n',
    });
  });

  it('exits 1 naming the Redis it could not reach, like the other admin commands', async () => {
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const result = await unlock(['--key', 'ak_1', '--redis-url', closed]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^accounts-gateway: the credential store is unavailable: Redis redis:\/\/127\.0\.0\.1:\d+: unreachable, connection refused \(.*\)\n$/,
    );
  });
});

describe('keys unlock on serve --workers 2', () => {
  let workers: GatewayProcess;

  beforeAll(async () => {
    workers = await startGateway(
      gatewayYaml({
        upstreamUrl: setup.upstream.url,
        redis: { url: redisUrl, keyPrefix: prefix },
        config: LOCKOUT,
      }),
      ['--workers', '2'],
    );
    // This file's first gateway, and the two workers.
    await untilSubscribers(redisUrl, prefix, 3);
  });

  afterAll(() => workers?.stop());

  let requests = 0;
  /**
   * The right secret on fresh connections until both workers have answered it (the primary
   * hands new connections to the workers in turn); every answer must have `status`.
   */
  async function onBothWorkers(status: number, from: From): Promise<void> {
    const seen = new Set<unknown>();
    for (let i = 0; i < 20 && seen.size < 2; i += 1) {
      const id = `unlock-workers-${(requests += 1)}`;
      const answer = await get(workers, ON_WORKERS.key, ON_WORKERS.secret, from, id);
      expect(answer.status, answer.body).toBe(status);
      seen.add((await requestLine(workers, id)).worker_pid);
    }
    expect(seen.size).toBe(2);
  }

  it('lifts the lock every worker remembers, and each accepts the right secret at once', async () => {
    const from = { from: '127.0.4.6' };
    await lockPair(workers, ON_WORKERS, from);
    // Each worker has refused the right secret once: each remembers the lock now.
    await onBothWorkers(429, from);
    expect((await unlock(['--key', ON_WORKERS.key], workers.configFile)).code).toBe(0);
    await onBothWorkers(200, from);
  });
});

import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RedisConfig } from '../../src/config/config-schema.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { createRedisClient } from '../../src/backends/redis/client.js';
import { openRedisStore } from '../support/redis-store.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { fromFetch } from '../support/http-answer.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { pollStatus } from '../support/poll-status.js';
import { redisConfig } from '../support/redis-config.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

/**
 * The outages in redis-outage.test.ts (closed port, killed server) fail fast on their own:
 * the connection is refused or reset. The outage that needs a timer is a Redis that keeps
 * the connection open and never answers: a real redis-server stopped with SIGSTOP (a hung
 * host, a network black hole), or a server that accepts and stays silent.
 *
 * No assertion here reads the wall clock, which a loaded machine stretches. Where the store's
 * own timers are what bounds the wait, the clock is faked (timers only: sockets stay real) and
 * a call is shown pending 1 ms before commandTimeoutMs and rejected at it. Elsewhere a call is
 * shown to fail while Redis is still silent or down: without a bound of the store's own it
 * would wait for Redis to come back, which the test only lets happen afterwards (so a missing
 * bound hangs the test until its timeout).
 */

const COMMAND_TIMEOUT_MS = 300;

/** A TCP server that accepts every connection and never writes a byte. */
async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The store under test, its breaker off: this file shows the bound every call meets, and
 * each of its operations must meet it; after a few such failures the breaker would answer
 * them at once instead (redis-breaker.test.ts).
 */
function config(overrides: Partial<RedisConfig>): RedisConfig {
  const base = redisConfig('redis://127.0.0.1:6379', uniquePrefix('timeout'));
  return {
    ...base,
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    breaker: { ...base.breaker, enabled: false },
    ...overrides,
  };
}

/** What a call has come to so far: still pending, or what it rejected with. */
interface Outcome {
  readonly settled: boolean;
  readonly error: unknown;
}

/** Starts watching `promise`, which must reject; `outcome()` tells how far it got. */
function watch(promise: Promise<unknown>): () => Outcome {
  let outcome: Outcome = { settled: false, error: undefined };
  promise.then(
    () => (outcome = { settled: true, error: new Error('expected a rejection') }),
    (error: unknown) => (outcome = { settled: true, error }),
  );
  return () => outcome;
}

/**
 * With timers faked, starts `operation` and shows it still pending 1 ms before
 * commandTimeoutMs, then settled at commandTimeoutMs; returns what it rejected with.
 */
async function failureAtTheTimeout(operation: () => Promise<unknown>, name = ''): Promise<unknown> {
  const outcome = watch(operation());
  await vi.advanceTimersByTimeAsync(COMMAND_TIMEOUT_MS - 1);
  expect(outcome().settled, `${name} before commandTimeoutMs`).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(outcome().settled, `${name} at commandTimeoutMs`).toBe(true);
  return outcome().error;
}

/** Runs `body` with setTimeout and clearTimeout faked, the rest (sockets, Date) real. */
async function withFakeTimers(body: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    await body();
  } finally {
    vi.useRealTimers();
  }
}

/** Every store operation, each of which must fail as "unavailable" when Redis is silent. */
function everyOperation(store: CredentialStore): [string, () => Promise<unknown>][] {
  const record = {
    key: 'ak_timeout',
    subject: 'alice',
    secretHash: '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq',
    label: '',
    status: 'active' as const,
    createdAt: '2024-05-01T10:00:00.000Z',
    scopes: [],
  };
  const user = {
    username: 'alice',
    subject: 'alice',
    passwordHash: record.secretHash,
    createdAt: '',
    scopes: [],
  };
  return [
    ['getKey', () => store.getKey('ak_timeout')],
    ['listKeys', () => store.listKeys('alice')],
    ['createKey', () => store.createKey(record, 5)],
    ['countActiveKeys', () => store.countActiveKeys('alice')],
    ['revokeKey', () => store.revokeKey('ak_timeout', '2024-05-01T10:00:00.000Z')],
    ['getUser', () => store.getUser('alice')],
    ['addUser', () => store.addUser(user)],
    ['setUserPassword', () => store.setUserPassword('alice', user.passwordHash)],
    [
      'replaceHash',
      () =>
        store.replaceHash(
          { kind: 'user', username: 'alice' },
          user.passwordHash,
          user.passwordHash,
        ),
    ],
    ['removeUser', () => store.removeUser('alice')],
    ['ping', () => store.ping()],
  ];
}

/**
 * Resolves once the store answers a ping. A Cluster client needs a few round trips before
 * it is ready, and the store answers "unavailable" until then; each failed ping takes up
 * to the command timeout, so this is no busy loop.
 */
async function untilUp(store: CredentialStore, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const error = await store.ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    if (error === undefined) return;
    expect(error).toMatchObject({ code: 'credential_store_unavailable' });
    if (Date.now() > deadline) throw new Error('the store never answered', { cause: error });
  }
}

function expectUnavailable(error: unknown, name: string): void {
  expect(error, name).toBeInstanceOf(GatewayError);
  expect(error, name).toMatchObject({ code: 'credential_store_unavailable', status: 503 });
}

/** Every operation rejects as unavailable exactly at commandTimeoutMs (timers faked). */
function expectEveryOperationUnavailableAtTheTimeout(store: CredentialStore): Promise<void> {
  return withFakeTimers(async () => {
    for (const [name, operation] of everyOperation(store))
      expectUnavailable(await failureAtTheTimeout(operation, name), name);
  });
}

/** Every operation rejects as unavailable, by itself: the caller keeps Redis away meanwhile. */
async function expectEveryOperationUnavailable(store: CredentialStore): Promise<void> {
  for (const [name, operation] of everyOperation(store)) {
    const error = await operation().then(
      () => new Error('expected a rejection'),
      (e: unknown) => e,
    );
    expectUnavailable(error, name);
  }
}

describe('a standalone Redis that accepts but never answers', () => {
  let redis: OwnRedis;

  beforeAll(async () => {
    redis = await startOwnRedis();
  });

  afterEach(() => {
    redis.resume();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it('makes a command on the configured client fail with a timeout at commandTimeoutMs, not before', async () => {
    const client = createRedisClient(config({ url: redis.url }));
    client.on('error', () => undefined);
    try {
      await client.ping();
      redis.pause();
      await withFakeTimers(async () => {
        const error = await failureAtTheTimeout(() => client.get('anything'));
        expect(error).toMatchObject({ message: 'Command timed out' });
      });
    } finally {
      client.disconnect();
    }
  });

  it('makes every store operation reject as credential_store_unavailable at commandTimeoutMs', async () => {
    const store = openRedisStore(config({ url: redis.url }));
    try {
      await store.ping();
      redis.pause();
      await expectEveryOperationUnavailableAtTheTimeout(store);
    } finally {
      redis.resume();
      await store.close();
    }
  });
});

describe('a gateway whose standalone Redis stops answering', () => {
  const prefix = uniquePrefix('paused');
  const pair = { key: 'ak_paused', secret: 'paused-secret-0123456789', subject: 'carol' };
  let redis: OwnRedis;
  let upstream: EchoUpstream;
  let running: RunningGateway;

  beforeAll(async () => {
    redis = await startOwnRedis();
    upstream = await startEchoUpstream();
    await seedKey(redis.url, prefix, pair);
    running = await startInProcessGateway({
      redisUrl: redis.url,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      // Nothing cached: every request must ask Redis.
      cacheTtlSec: 0,
    });
  });

  afterAll(async () => {
    redis?.resume();
    await running?.close();
    await upstream?.close();
    await redis?.stop();
  });

  // The answers come while Redis is still paused: only the store's timeout can end them (the
  // bound itself is shown with a faked clock above).
  it('answers 503 credential_store_unavailable while Redis is silent, and 200 again once Redis answers', async () => {
    const send = (): Promise<Response> =>
      fetch(`${running.url}/accounts`, {
        headers: { authorization: basicHeader(pair.key, pair.secret) },
      });
    expect((await send()).status).toBe(200);

    redis.pause();
    const res = await fromFetch(await send());
    expect(res.status).toBe(503);
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers['retry-after']).toBe('1');
    expectGatewayError(res, 'credential_store_unavailable', {
      message: 'Credentials cannot be checked right now.',
    });

    const notReady = await fromFetch(await fetch(`${running.adminUrl}/readyz`));
    expect(notReady.status).toBe(503);
    expect(notReady.headers['retry-after']).toBe('1');
    expectGatewayError(notReady, 'credential_store_unavailable');

    redis.resume();
    const recovered = await pollStatus(send, 200, { deadlineMs: 10_000, intervalMs: 50 });
    expect(recovered.answer.json).toEqual(ECHO_BODY);
  });
});

describe('a Redis Cluster that cannot answer', () => {
  let node: OwnRedis;

  beforeAll(async () => {
    // A one-node cluster holding every slot: a real Cluster, as ioredis's Cluster client sees it.
    node = await startOwnRedis({ cluster: true });
    const admin = new Redis(node.url);
    try {
      await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      // The node takes a moment to declare the cluster healthy.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const info = String(await admin.call('CLUSTER', 'INFO'));
        if (info.includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`cluster never became ok:\n${info}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      admin.disconnect();
    }
  });

  afterEach(() => {
    node.resume();
  });

  afterAll(async () => {
    await node?.stop();
  });

  const clusterConfig = (): RedisConfig =>
    config({ mode: 'cluster', nodes: [`127.0.0.1:${node.port}`] });

  it('serves a Cluster-mode store while the node answers', async () => {
    const store = openRedisStore(clusterConfig());
    try {
      await untilUp(store);
      await expect(store.getKey('ak_none')).resolves.toBeUndefined();
      await expect(store.listKeys('nobody')).resolves.toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('rejects every operation at commandTimeoutMs while the ready cluster node is paused', async () => {
    const store = openRedisStore(clusterConfig());
    try {
      await untilUp(store);
      node.pause();
      await expectEveryOperationUnavailableAtTheTimeout(store);
    } finally {
      node.resume();
      await store.close();
    }
  });

  // ioredis's Cluster queues commands in its own offline queue, with no timer, until the
  // cluster is ready again: without a bound of the store's own, these calls never return.
  it(
    'rejects every operation while the cluster is down, before it is back, and serves again once it is',
    { timeout: 30000 },
    async () => {
      const store = openRedisStore(clusterConfig());
      try {
        await untilUp(store);
        await node.kill();
        await expectEveryOperationUnavailable(store);

        await node.start();
        await untilUp(store);
        await expect(store.getKey('ak_none')).resolves.toBeUndefined();
      } finally {
        await store.close();
      }
    },
  );

  it(
    'rejects every operation at commandTimeoutMs when the startup node accepts but never answers',
    { timeout: 10000 },
    async () => {
      const silent = await startSilentServer();
      const store = openRedisStore(
        config({ mode: 'cluster', nodes: [`127.0.0.1:${silent.port}`] }),
      );
      try {
        await expectEveryOperationUnavailableAtTheTimeout(store);
      } finally {
        await store.close();
        await silent.close();
      }
    },
  );
});

describe('a Sentinel that accepts but never answers', () => {
  it('makes every store operation reject at commandTimeoutMs', async () => {
    const silent = await startSilentServer();
    const store = openRedisStore(
      config({ mode: 'sentinel', nodes: [`127.0.0.1:${silent.port}`], sentinelName: 'mymaster' }),
    );
    try {
      await expectEveryOperationUnavailableAtTheTimeout(store);
    } finally {
      await store.close();
      await silent.close();
    }
  });
});

import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { redisAddress } from '../../src/backends/redis/client.js';
import { formatKeyId, subjectTag } from '../../src/identity/key-id.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { CircuitOpenError } from '../../src/concurrency/circuit-breaker.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { createLastUseRecorder } from '../../src/credentials/last-use-recorder.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { basicHeader } from '../support/basic-header.js';
import { countingRedis, type CountingRedis } from '../support/counting-redis.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { fromFetch, type HttpAnswer } from '../support/http-answer.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { recordingLog, type RecordedLine } from '../support/recording-log.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix, seedKey } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// The breaker in front of a real Redis that stops answering (SIGSTOP: the connection stays
// open, nothing comes back, each call waits out commandTimeoutMs) or stops (refused). The
// breakers' clock is the test's own, so "once the open time has passed" is a step of the
// test, never a wait. "At once" is shown by what was sent (nothing) and by the answer coming
// before the event loop has run anything else (no timer, no socket).

const prefix = uniquePrefix('breaker');
const layout = redisLayout(prefix);
// A self-describing id: its hash is named from the id alone, one HGETALL per read.
const pair = {
  key: formatKeyId(subjectTag('erin'), 'breakerPair0123456789abc'),
  secret: 'breaker-secret-0123456789',
  subject: 'erin',
};

let redis: OwnRedis;

beforeAll(async () => {
  redis = await startOwnRedis();
  await seedKey(redis.url, prefix, pair);
});

afterAll(async () => {
  await redis?.stop();
});

interface Harness {
  readonly backend: Backend;
  readonly store: CredentialStore;
  readonly counting: CountingRedis;
  readonly lines: RecordedLine[];
  readonly changes: { target: string; open: boolean }[];
  readonly target: string;
  /** Moves the breakers' clock. */
  advance(ms: number): void;
}

const opened: Harness[] = [];

/** A Redis backend on this file's Redis, counting what its client sends. */
function openBackend(): Harness {
  const config = redisConfig(redis.url, prefix);
  const counting = countingRedis(config);
  const log = recordingLog();
  const changes: { target: string; open: boolean }[] = [];
  let clock = 0;
  const backend = createRedisBackend(config, {
    client: counting.client,
    log,
    onBreakerChange: (target, open) => changes.push({ target, open }),
    breakerClock: () => clock,
  });
  const harness: Harness = {
    backend,
    store: backend.credentials,
    counting,
    lines: log.lines,
    changes,
    target: redisAddress(config),
    advance: (ms) => (clock += ms),
  };
  opened.push(harness);
  return harness;
}

afterEach(async () => {
  redis.resume();
  await Promise.all(opened.splice(0).map((h) => h.store.close()));
});

const unavailable = { code: 'credential_store_unavailable', status: 503 };

/** Pauses Redis and fails three reads in a row, each by its timeout: the breaker opens. */
async function openBreaker(h: Harness): Promise<void> {
  await expect(h.store.getKey('ak_breaker_none')).resolves.toBeUndefined();
  redis.pause();
  for (let i = 0; i < 3; i += 1)
    await expect(h.store.getKey('ak_breaker_none')).rejects.toMatchObject(unavailable);
  h.counting.reset();
}

/**
 * What `call()` rejected with, having come before anything else ran (no timer fired, no
 * socket was read): one turn of the event loop, while Redis is paused.
 */
async function refusedAtOnce(call: () => Promise<unknown>): Promise<unknown> {
  let outcome: { error: unknown } | undefined;
  call().then(
    () => (outcome = { error: new Error('expected a rejection') }),
    (error: unknown) => (outcome = { error }),
  );
  await new Promise((resolve) => setImmediate(resolve));
  expect(outcome, 'settled within one turn of the event loop').toBeDefined();
  return outcome?.error;
}

/** Every path of the backend, each of which the breaker answers for while open. */
function everyPath(h: Harness): [string, () => Promise<unknown>][] {
  const lockout = h.backend.lockout(parseConfig('', 'test.yaml').lockout);
  const buckets = h.backend.buckets({ maxTrackedBuckets: 10 });
  return [
    ['a credential read (cache miss)', () => h.store.getKey(pair.key)],
    ['a user read (token exchange)', () => h.store.getUser('erin')],
    ['a listing', () => h.store.listKeys(pair.subject)],
    [
      'a lockout check',
      () =>
        lockout.begin({ kind: 'basic', id: pair.key, address: '10.0.0.1', network: '10.0.0.1' }),
    ],
    [
      'a rate-limit take',
      async () =>
        buckets.take({
          buckets: [
            {
              bucket: {
                kind: 'credential',
                owner: { kind: 'key', key: pair.key, subject: pair.subject },
              },
              policy: { requests: 10, periodSec: 1, burst: 10 },
            },
          ],
        }),
    ],
    [
      'a last-use write',
      () => h.store.recordLastUse(new Map([[pair.key, new Date().toISOString()]])),
    ],
  ];
}

describe('the Redis breaker', () => {
  it('after 3 calls in a row fail, answers every path at once with 503 and Retry-After, sending nothing to Redis', async () => {
    const h = openBackend();
    await openBreaker(h);
    for (const [name, call] of everyPath(h)) {
      const error = await refusedAtOnce(call);
      expect(error, name).toBeInstanceOf(GatewayError);
      expect(error, name).toMatchObject({ ...unavailable, retryAfterSec: 1 });
      expect((error as GatewayError).cause, name).toBeInstanceOf(CircuitOpenError);
    }
    expect(h.counting.sent()).toEqual([]);
    expect(h.lines).toEqual([
      expect.objectContaining({ msg: 'redis connected' }),
      {
        level: 'warn',
        store: 'redis',
        target: h.target,
        failures: 3,
        retry_after_ms: 200,
        cause: 'no answer within 300 ms',
        msg: 'redis breaker opened',
      },
    ]);
    expect(h.changes).toEqual([{ target: h.target, open: true }]);
  });

  it('leaves readiness to ask Redis itself while open', async () => {
    const h = openBackend();
    await openBreaker(h);
    await expect(h.store.ping()).rejects.toMatchObject(unavailable);
    expect(h.counting.sent()).toEqual(['ping']);
  });

  it('lets one call probe once the open time has passed, and closes when Redis answers it', async () => {
    const h = openBackend();
    await openBreaker(h);
    redis.resume();
    h.advance(199);
    await expect(h.store.getKey(pair.key)).rejects.toMatchObject(unavailable);
    expect(h.counting.sent()).toEqual([]);

    h.advance(1);
    await expect(h.store.getKey(pair.key)).resolves.toMatchObject({ subject: pair.subject });
    await expect(h.store.getUser('nobody')).resolves.toBeUndefined();
    expect(h.counting.sent()).toEqual(['hgetall', 'hgetall']);
    expect(h.lines.at(-1)).toEqual({
      level: 'info',
      store: 'redis',
      target: h.target,
      open_ms: 200,
      by: 'probe',
      msg: 'redis breaker closed',
    });
    expect(h.changes).toEqual([
      { target: h.target, open: true },
      { target: h.target, open: false },
    ]);
  });

  it('stays open after a failed probe, and doubles the wait before the next one up to maxOpenMs', async () => {
    const h = openBackend();
    await openBreaker(h);
    const probesAfter = async (waitMs: number): Promise<void> => {
      h.advance(waitMs - 1);
      await expect(h.store.getKey(pair.key)).rejects.toMatchObject(unavailable);
      expect(h.counting.sent(), `nothing before ${waitMs} ms`).toEqual([]);
      h.advance(1);
      await expect(h.store.getKey(pair.key)).rejects.toMatchObject(unavailable);
      expect(h.counting.sent(), `a probe at ${waitMs} ms`).toEqual(['hgetall']);
      h.counting.reset();
    };
    for (const waitMs of [200, 400, 800, 1000, 1000]) await probesAfter(waitMs);
    expect(h.changes).toEqual([{ target: h.target, open: true }]);
  });

  it('counts a stopped Redis (connections refused) too, and lets a call probe as soon as the client is connected again', async () => {
    const h = openBackend();
    await expect(h.store.getKey(pair.key)).resolves.toBeDefined();
    await redis.kill();
    try {
      for (let i = 0; i < 3; i += 1)
        await expect(h.store.getKey(pair.key)).rejects.toMatchObject(unavailable);
      h.counting.reset();
      await expect(h.store.getKey(pair.key)).rejects.toMatchObject(unavailable);
      expect(h.counting.sent()).toEqual([]);
      const line = h.lines.find((entry) => entry.msg === 'redis breaker opened');
      expect(line).toMatchObject({ target: h.target, failures: 3 });
      // The connection's own failure: it is down.
      expect(line?.cause).toMatch(/^unreachable, /);
    } finally {
      await redis.start();
      await seedKey(redis.url, prefix, pair);
    }
    // Connected again: the next call probes at once, with no time passed on the breakers' clock.
    await untilReady(h.store);
    await expect(h.store.getKey(pair.key)).resolves.toBeDefined();
    expect(h.changes.map((change) => change.open)).toEqual([true, false]);
  });

  it("never opens on Redis's error replies: each call is sent and answered", async () => {
    const h = openBackend();
    const admin = new Redis(redis.url);
    try {
      // An id without a tag, as another writer's: its key-tag entry, then no hash where it says.
      await admin.set(layout.keyTag('ak_breaker_wrongtype'), layout.tagOf(pair.subject));
      await admin.set(layout.key('ak_breaker_wrongtype', pair.subject), 'not a hash');
    } finally {
      admin.disconnect();
    }
    await expect(h.store.getKey(pair.key)).resolves.toBeDefined();
    h.counting.reset();
    for (let i = 0; i < 5; i += 1)
      await expect(h.store.getKey('ak_breaker_wrongtype')).rejects.toMatchObject(unavailable);
    await expect(h.store.getKey(pair.key)).resolves.toBeDefined();
    expect(h.counting.sent()).toEqual([
      ...Array.from({ length: 5 }, () => ['get', 'hgetall']).flat(),
      'hgetall',
    ]);
    expect(h.changes).toEqual([]);
  });

  it('keeps last uses while open, without a command, and writes them with the first batch after it closes', async () => {
    const h = openBackend();
    const failures: unknown[] = [];
    const recorder = createLastUseRecorder({
      write: (uses) => h.store.recordLastUse(uses),
      intervalMs: 60_000,
      timer: false,
      onError: (error) => failures.push(error),
    });
    recorder.touch(pair.key);
    await openBreaker(h);
    await recorder.flush();
    expect(h.counting.sent()).toEqual([]);
    expect(failures).toEqual([expect.objectContaining(unavailable)]);

    redis.resume();
    h.advance(200);
    await recorder.flush();
    expect(failures).toHaveLength(1);
    expect((await h.store.getKey(pair.key))?.lastUsedAt).toEqual(expect.any(String));
    expect(h.changes.map((change) => change.open)).toEqual([true, false]);
  });
});

describe('a gateway whose Redis breaker is open', () => {
  const cold = { key: 'ak_breaker_cold', secret: 'breaker-cold-0123456789', subject: 'frank' };
  // Its own pair: the five-an-hour limit spends its bucket for the hour.
  const leased = { key: 'ak_breaker_lease', secret: 'breaker-lease-0123456789', subject: 'gina' };
  let upstream: EchoUpstream;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    await seedKey(redis.url, prefix, cold);
    await seedKey(redis.url, prefix, leased);
  });

  afterAll(async () => {
    await upstream?.close();
  });

  /**
   * A gateway on a fresh backend with an exact-mode credential rate limit (every request,
   * cached or not, runs a script in Redis) failing `onStoreError`; no last-use writes on a
   * timer. Resolves once the cached pair answered 200 and Redis, paused, has failed three of
   * its checks.
   */
  async function gatewayWithOpenBreaker(onStoreError: 'open' | 'closed') {
    const { h, accounts } = await gatewayOnPausingRedis({
      credential: { requests: 1_000_000, periodSec: 1, mode: 'exact' },
      onStoreError,
    });
    redis.pause();
    const whileFailing = onStoreError === 'open' ? 200 : 503;
    for (let i = 0; i < 3; i += 1) expect((await accounts(pair)).status).toBe(whileFailing);
    h.counting.reset();
    return { h, accounts };
  }

  /** A gateway with these rate limits whose `cached` pair answered 200 (Redis answers). */
  async function gatewayOnPausingRedis(rateLimits: Record<string, unknown>, cached = pair) {
    const h = openBackend();
    const running = await startInProcessGateway({
      redisUrl: redis.url,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      cacheTtlSec: 300,
      backend: h.backend,
      config: { rateLimits, keys: { lastUsedIntervalSec: 0 } },
    });
    closing.push(running);
    // The store drops every cached pair once its revocation subscription stands: prime after.
    await untilSubscribers(redis.url, prefix, 1);
    const accounts = async (p: { key: string; secret: string }) =>
      fromFetch(
        await fetch(`${running.url}/accounts`, {
          headers: { authorization: basicHeader(p.key, p.secret) },
        }),
      );
    expect((await accounts(cached)).status).toBe(200);
    return { h, accounts };
  }

  const closing: RunningGateway[] = [];
  afterEach(async () => {
    redis.resume();
    await Promise.all(closing.splice(0).map((running) => running.close()));
  });

  const expectRefused = (answer: HttpAnswer): void => {
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.headers['www-authenticate']).toBeUndefined();
    expectGatewayError(answer, 'credential_store_unavailable', {
      message: 'Credentials cannot be checked right now.',
    });
  };

  it('lets a cached pair through a rate limit failing open, and answers a pair not cached 503 with Retry-After, sending nothing', async () => {
    const { h, accounts } = await gatewayWithOpenBreaker('open');
    const cached = await accounts(pair);
    expect(cached.status).toBe(200);
    expect(cached.json).toEqual(ECHO_BODY);
    expectRefused(await accounts(cold));
    expect(h.counting.sent()).toEqual([]);
  });

  it('keeps a lease-mode limit deciding in process, failing closed or not: 200 within the policy, then 429, never 503', async () => {
    // Five an hour: each request asks Redis for a lease of one, so each one meets the pause.
    const { accounts } = await gatewayOnPausingRedis(
      { credential: { requests: 5, periodSec: 3600 }, onStoreError: 'closed' },
      leased,
    );
    redis.pause();
    const statuses = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await accounts(leased)).status);
    // The in-process fallback starts full: the policy's burst, then refusals.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('answers even a cached pair 503 with Retry-After through a rate limit failing closed, sending nothing', async () => {
    const { h, accounts } = await gatewayWithOpenBreaker('closed');
    expectRefused(await accounts(pair));
    expectRefused(await accounts(cold));
    expect(h.counting.sent()).toEqual([]);
  });
});

/** Resolves once the store's connection says it is ready (an event, not a poll). */
function untilReady(store: CredentialStore): Promise<void> {
  if (store.health.ready()) return Promise.resolve();
  return new Promise((resolve) =>
    store.health.onChange((ready) => {
      if (ready) resolve();
    }),
  );
}

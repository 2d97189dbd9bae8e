import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway/gateway.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createLogger } from '../../src/observability/create-logger.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { fromFetch } from '../support/http-answer.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { startRawUpstream, type RawUpstream } from '../support/raw-upstream.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Rate limits through a whole gateway in this process: the in-process buckets of the memory
// store, and the Redis buckets when Redis goes away (fail open, fail closed).

const pair = { key: 'ak_limited', secret: 'limited-secret-0123456789', subject: 'alice' };
const auth = { authorization: basicHeader(pair.key, pair.secret) };
let upstream: EchoUpstream;

/** The memory store seeded with `pair`. */
const seededPair = async () => ({
  seed: {
    keys: [
      {
        key: pair.key,
        subject: pair.subject,
        secretHash: await bcrypt.hash(pair.secret, TEST_BCRYPT_COST),
      },
    ],
  },
});

beforeAll(async () => {
  upstream = await startEchoUpstream();
});

afterAll(async () => {
  await upstream.close();
});

describe('a gateway on the memory store with rate limits', () => {
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    const yaml = gatewayYaml({
      upstreamUrl: upstream.url,
      config: {
        server: { host: '127.0.0.1', port: 0 },
        credentials: await seededPair(),
        rateLimits: {
          credential: { requests: 2, periodSec: 3600 },
          address: { requests: 1, periodSec: 3600 },
        },
        logging: { level: 'silent' },
      },
    });
    gateway = await createGateway(parseConfig(yaml, 'rate-limits.yaml'), {
      logger: createLogger('silent'),
    });
    url = `http://127.0.0.1:${(await gateway.listen()).port}`;
  });

  afterAll(async () => {
    await gateway.close();
  });

  it('forwards the burst with the IETF headers, then answers 429 with Retry-After and forwards nothing', async () => {
    const mark = upstreamMark(upstream);
    const answers = [];
    for (let i = 0; i < 3; i += 1)
      answers.push(await fromFetch(await fetch(`${url}/accounts`, { headers: auth })));
    // `t` counts down from the first request: seconds between them (a loaded machine) take
    // as many off the later answers' t and Retry-After; the counts are exact.
    expect(
      answers.map((a) => [a.status, a.headers['ratelimit-policy'], a.headers.ratelimit]),
    ).toEqual([
      [200, '"credential";q=2;w=3600', '"credential";r=1;t=1800'],
      [200, '"credential";q=2;w=3600', expect.stringMatching(/^"credential";r=0;t=3(600|5\d\d)$/)],
      [429, '"credential";q=2;w=3600', expect.stringMatching(/^"credential";r=0;t=1(800|7\d\d)$/)],
    ]);
    const refused = answers[2];
    if (refused === undefined) throw new Error('three answers');
    // The wait of the refusing bucket, as its RateLimit `t`.
    const wait = /;t=(\d+)$/.exec(String(refused.headers.ratelimit))?.[1];
    expect(refused.headers['retry-after']).toBe(wait);
    expectGatewayError(refused, 'rate_limited', { message: 'Too many requests; retry later.' });
    expect(mark.since()).toHaveLength(2);
  });

  it('limits the routes without credentials per address, and does not count 401s there', async () => {
    const wrong = { authorization: basicHeader(pair.key, 'a-wrong-secret-0123456789') };
    const denied = await fromFetch(await fetch(`${url}/accounts`, { headers: wrong }));
    expect([denied.status, denied.headers.ratelimit]).toEqual([401, undefined]);

    const first = await fromFetch(await fetch(`${url}/.well-known/jwks.json`));
    expect([first.status, first.headers.ratelimit]).toEqual([200, '"address";r=0;t=3600']);
    const second = await fromFetch(await fetch(`${url}/.well-known/jwks.json`));
    expect([second.status, second.headers['retry-after']]).toEqual([429, '3600']);
    const token = await fromFetch(
      await fetch(`${url}/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"username":"nobody","password":"nothing-at-all"}',
      }),
    );
    expect([token.status, token.headers['ratelimit-policy']]).toEqual([
      429,
      '"address";q=1;w=3600',
    ]);
  });
});

describe('a gateway with rate limits whose upstream is down', () => {
  // The fields are kept beside the request and appended to the upstream's head; an answer
  // the gateway writes itself when no head came (502) must carry them all the same. The
  // upstream resets each connection: a port nobody listens on could be taken meanwhile by a
  // server of another test file.
  let resetting: RawUpstream;
  beforeAll(async () => {
    resetting = await startRawUpstream((socket) => socket.destroy());
  });
  afterAll(async () => {
    await resetting.close();
  });

  it.each(['http-proxy-3', 'undici'] as const)(
    'answers 502 with the RateLimit fields of the request it counted (%s)',
    async (engine) => {
      const yaml = gatewayYaml({
        config: {
          server: { host: '127.0.0.1', port: 0 },
          upstreams: { accounts: { url: resetting.url, engine } },
          credentials: await seededPair(),
          rateLimits: { credential: { requests: 5, periodSec: 3600 } },
          logging: { level: 'silent' },
        },
      });
      const gateway = await createGateway(parseConfig(yaml, 'upstream-down.yaml'), {
        logger: createLogger('silent'),
      });
      try {
        const url = `http://127.0.0.1:${(await gateway.listen()).port}`;
        const answer = await fromFetch(await fetch(`${url}/accounts`, { headers: auth }));
        expectGatewayError(answer, 'upstream_unavailable');
        expect([answer.headers['ratelimit-policy'], answer.headers.ratelimit]).toEqual([
          '"credential";q=5;w=3600',
          '"credential";r=4;t=720',
        ]);
      } finally {
        await gateway.close();
      }
    },
  );
});

describe('a gateway whose Redis goes away', () => {
  let redis: TestRedis;
  const prefix = uniquePrefix('rl-outage');
  let open: RunningGateway;
  let closed: RunningGateway;

  beforeAll(async () => {
    redis = await startLocalRedis();
    await seedKey(redis.url, prefix, pair);
    const start = (onStoreError: 'open' | 'closed') =>
      startInProcessGateway({
        redisUrl: redis.url,
        keyPrefix: prefix,
        upstreamUrl: upstream.url,
        cacheTtlSec: 300,
        // One request per half hour, a burst of two: the two requests below use the burst
        // however far apart they come (with 1,000 a minute, 60 ms apart gave one back). Exact
        // mode: onStoreError is its fallback (lease mode's is redis-breaker.test.ts's).
        config: {
          rateLimits: {
            credential: { requests: 2, periodSec: 3600, mode: 'exact' },
            onStoreError,
          },
        },
      });
    open = await start('open');
    closed = await start('closed');
    await untilSubscribers(redis.url, prefix, 2);
  });

  afterAll(async () => {
    await open.close();
    await closed.close();
    await redis.stop();
  });

  it('lets requests through when failing open (counted), and answers 503 when failing closed', async () => {
    // Verified while Redis answers, so the pair is in each gateway's cache (one shared budget).
    const before = [];
    for (const gateway of [open, closed]) {
      const ok = await fromFetch(await fetch(`${gateway.url}/accounts`, { headers: auth }));
      before.push([ok.status, ok.headers.ratelimit]);
    }
    expect(before).toEqual([
      [200, '"credential";r=1;t=1800'],
      [200, expect.stringMatching(/^"credential";r=0;t=3(600|5\d\d)$/)],
    ]);
    await redis.stop();

    const passed = await fromFetch(await fetch(`${open.url}/accounts`, { headers: auth }));
    expect([passed.status, passed.headers.ratelimit]).toEqual([200, undefined]);
    const metrics = await (await fetch(`${open.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^gateway_rate_limit_store_errors_total 1$/m);

    const refused = await fromFetch(await fetch(`${closed.url}/accounts`, { headers: auth }));
    expect([refused.status, refused.headers['retry-after']]).toEqual([503, '1']);
    expectGatewayError(refused, 'credential_store_unavailable', {
      message: 'Credentials cannot be checked right now.',
    });
  });
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, upstreamMark, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { pollStatus } from '../support/poll-status.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, send } from '../support/send.js';
import { withinLimitClock } from '../support/rate-limit-header.js';

// Rate limits on the built gateway: two processes on one Redis share every budget. The
// periods are an hour long, so nothing refills during the test and every count is exact.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('ratelimit');
const keys = redisLayout(prefix);
const HOUR = 3600;

let upstream: EchoUpstream;
let gatewayA: GatewayProcess;
let gatewayB: GatewayProcess;
let redis: Redis;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  redis = new Redis(redisUrl);
  const signing = await generateSigningKey();
  const yaml = gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: redisUrl, keyPrefix: prefix },
    signingKeyPem: signing.pem,
    config: {
      routes: [
        { name: 'accounts', paths: ['/accounts'], upstream: 'accounts', upstreamPath: '/accounts' },
        {
          name: 'limited',
          paths: ['/limited'],
          upstream: 'accounts',
          upstreamPath: '/accounts',
          rateLimit: { requests: 2, periodSec: HOUR },
        },
      ],
      rateLimits: {
        credential: { requests: 6, periodSec: HOUR },
        address: { requests: 2, periodSec: HOUR },
      },
      logging: { level: 'info', requests: false },
    },
  });
  [gatewayA, gatewayB] = await Promise.all([startGateway(yaml), startGateway(yaml)]);
});

afterAll(async () => {
  await Promise.all([gatewayA?.stop(), gatewayB?.stop()]);
  await upstream?.close();
  redis?.disconnect();
});

let pairs = 0;
async function newPair(): Promise<{ key: string; subject: string; header: string }> {
  pairs += 1;
  const pair = {
    key: `ak_rl${pairs}`,
    secret: `rate-limit-secret-${pairs}-0123456789`,
    subject: `rl${pairs}`,
  };
  await seedKey(redisUrl, prefix, pair);
  return { key: pair.key, subject: pair.subject, header: basicHeader(pair.key, pair.secret) };
}

const row = (a: HttpAnswer) => [a.status, a.headers.ratelimit, a.headers['retry-after']];

describe('rate limits on two gateway processes sharing one Redis', () => {
  it('share one budget per key: six requests pass in all, whichever gateway takes them', async () => {
    const { header } = await newPair();
    const mark = upstreamMark(upstream);
    const answers: HttpAnswer[] = [];
    const started = performance.now();
    for (let i = 0; i < 8; i += 1) {
      const gateway = i % 2 === 0 ? gatewayA : gatewayB;
      answers.push(await send(gateway.url, '/accounts', { headers: { authorization: header } }));
    }
    const elapsedMs = performance.now() - started;
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    const expected = [
      '"credential";r=5;t=600',
      '"credential";r=4;t=1200',
      '"credential";r=3;t=1800',
      '"credential";r=2;t=2400',
      '"credential";r=1;t=3000',
      '"credential";r=0;t=3600',
      '"credential";r=0;t=600',
      '"credential";r=0;t=600',
    ];
    expect(
      answers.map((a, i) => withinLimitClock(a.headers.ratelimit, expected[i], elapsedMs)),
    ).toEqual(expected);
    for (const answer of answers)
      expect(answer.headers['ratelimit-policy']).toBe('"credential";q=6;w=3600');
    const refused = answers[7];
    if (refused === undefined) throw new Error('eight answers');
    // The refusing bucket's wait, as its `t`.
    expect(refused.headers['retry-after']).toBe(
      /;t=(\d+)$/.exec(String(refused.headers.ratelimit))?.[1],
    );
    expectGatewayError(refused, 'rate_limited', { message: 'Too many requests; retry later.' });
    expect(mark.since()).toHaveLength(6);
  });

  it('counts a route policy per credential and route beside the credential policy', async () => {
    const { header } = await newPair();
    const answers: HttpAnswer[] = [];
    for (const gateway of [gatewayA, gatewayB, gatewayA])
      answers.push(await send(gateway.url, '/limited', { headers: { authorization: header } }));
    expect(
      answers.map((a) => [a.status, a.headers['ratelimit-policy'], a.headers.ratelimit]),
    ).toEqual([
      [
        200,
        '"credential";q=6;w=3600, "route";q=2;w=3600',
        '"credential";r=5;t=600, "route";r=1;t=1800',
      ],
      [
        200,
        '"credential";q=6;w=3600, "route";q=2;w=3600',
        '"credential";r=4;t=1200, "route";r=0;t=3600',
      ],
      // Refused by the route: the credential's budget is not charged.
      [
        429,
        '"credential";q=6;w=3600, "route";q=2;w=3600',
        '"credential";r=4;t=1200, "route";r=0;t=1800',
      ],
    ]);
    const other = await send(gatewayB.url, '/accounts', { headers: { authorization: header } });
    expect(row(other)).toEqual([200, '"credential";r=3;t=1800', undefined]);
    const metrics = await (await fetch(`${gatewayA.adminUrl ?? ''}/metrics`)).text();
    expect(metrics).toMatch(/^gateway_rate_limited_total\{policy="route"\} 1$/m);
  });

  it('applies a per-key override written in Redis at each gateway’s next lease', async () => {
    const { key, subject, header } = await newPair();
    const get = (gateway: GatewayProcess) =>
      send(gateway.url, '/accounts', { headers: { authorization: header } });
    await redis.hset(keys.key(key, subject), 'rate_limit', '1/60');
    const first = await get(gatewayA);
    expect([first.status, first.headers['ratelimit-policy']]).toEqual([
      200,
      '"credential";q=1;w=60',
    ]);
    expect(row(await get(gatewayB))).toEqual([429, '"credential";r=0;t=60', '60']);

    await redis.hset(keys.key(key, subject), 'rate_limit', 'none');
    // B holds its refusal at most a lease's life (rateLimits.lease.lifeMs, 1 s), then asks
    // Redis again and reads the override.
    const { answer: lifted } = await pollStatus(
      () => fetch(`${gatewayB.url}/accounts`, { headers: { authorization: header } }),
      200,
      {
        deadlineMs: 10_000,
        intervalMs: 50,
      },
    );
    expect([lifted.headers.ratelimit, lifted.headers['ratelimit-policy']]).toEqual([
      undefined,
      undefined,
    ]);
  });

  it('refuses a revoked pair on the other gateway whatever lease of its bucket that gateway holds', async () => {
    const { key, subject, header } = await newPair();
    // A high limit of its own: each gateway takes a lease of many requests at once.
    await redis.hset(keys.key(key, subject), 'rate_limit', '100000/1');
    const get = () => send(gatewayB.url, '/accounts', { headers: { authorization: header } });
    expect([(await get()).status, (await get()).status]).toEqual([200, 200]);
    const revoked = await send(gatewayA.url, `/keys/${key}?force=true`, {
      method: 'DELETE',
      headers: { authorization: header },
    });
    expect(revoked.status).toBe(200);
    // The credentials are checked before the limits: a lease never keeps a pair alive.
    const { answer } = await pollStatus(
      () => fetch(`${gatewayB.url}/accounts`, { headers: { authorization: header } }),
      401,
      { deadlineMs: 10_000 },
    );
    expectGatewayError(answer, 'invalid_credentials');
    expect(answer.headers.ratelimit).toBeUndefined();
  });

  it('counts Bearer tokens per subject, with the subject override for the tokens and the subject as a whole', async () => {
    const user = {
      username: 'rl-bearer',
      subject: 'rl-bearer-subject',
      password: 'a-long-password',
    };
    await putUser(redisUrl, prefix, user);
    // Token requests are limited per address: these two come from an address of their own.
    const tokens = [
      await issueToken(gatewayA.url, user.username, user.password, '127.0.0.21'),
      await issueToken(gatewayB.url, user.username, user.password, '127.0.0.21'),
    ];
    await redis.hset(keys.subject(user.subject), 'rate_limit', '3/3600,2');
    const answers: HttpAnswer[] = [];
    for (const [i, token] of [...tokens, ...tokens].entries()) {
      const gateway = i % 2 === 0 ? gatewayA : gatewayB;
      answers.push(
        await send(gateway.url, '/accounts', { headers: { authorization: bearerHeader(token) } }),
      );
    }
    // For Bearer the subject is the credential: the override is both buckets' policy.
    expect(answers.map(row)).toEqual([
      [200, '"credential";r=1;t=1200, "subject";r=1;t=1200', undefined],
      [200, '"credential";r=0;t=2400, "subject";r=0;t=2400', undefined],
      [429, '"credential";r=0;t=1200, "subject";r=0;t=1200', '1200'],
      [429, '"credential";r=0;t=1200, "subject";r=0;t=1200', '1200'],
    ]);
  });

  it('limits requests without credentials per client address, across gateways', async () => {
    const jwks = (gateway: GatewayProcess, from: string) =>
      send(gateway.url, '/.well-known/jwks.json', { from });
    const answers = [
      await jwks(gatewayA, '127.0.0.31'),
      await jwks(gatewayB, '127.0.0.31'),
      await jwks(gatewayA, '127.0.0.31'),
      await jwks(gatewayB, '127.0.0.32'),
    ];
    expect(answers.map(row)).toEqual([
      [200, '"address";r=1;t=1800', undefined],
      [200, '"address";r=0;t=3600', undefined],
      [429, '"address";r=0;t=1800', '1800'],
      [200, '"address";r=1;t=1800', undefined],
    ]);
  });
});

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { startRedisGateway, type RedisGateway } from '../support/redis-gateway.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';
import { withinLimitClock } from '../support/rate-limit-header.js';

// Issue 13: at 3 requests an hour per key, five generations of GET, GET, POST /keys gave one
// subject 15 requests: every new pair came with a fresh budget. rateLimits.subject (or a
// subject's rate_limit override) bounds the subject across all its pairs. Hour-long periods:
// nothing refills during the test, so every count is exact.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('subjectrl');
const keys = redisLayout(prefix);
const HOUR = 3600;
const PER_KEY = 3;
const PER_SUBJECT = 5;

let setup: RedisGateway;
let gateway: GatewayProcess;
let redis: Redis;

beforeAll(async () => {
  setup = await startRedisGateway(redisUrl, prefix, {
    rateLimits: {
      credential: { requests: PER_KEY, periodSec: HOUR },
      subject: { requests: PER_SUBJECT, periodSec: HOUR },
    },
    keys: { maxActivePerSubject: 20 },
    logging: { level: 'info', requests: false },
  });
  ({ gateway, redis } = setup);
});

afterAll(() => setup?.close());

interface Pair {
  readonly key: string;
  readonly secret: string;
}

let subjects = 0;
async function freshSubject(): Promise<{ subject: string; pair: Pair }> {
  subjects += 1;
  const subject = `minting${subjects}`;
  const pair = { key: `ak_minting${subjects}`, secret: `minting-secret-${subjects}-0123456789` };
  await seedKey(redisUrl, prefix, { ...pair, subject });
  return { subject, pair };
}

const get = (pair: Pair) =>
  send(gateway.url, '/accounts', {
    headers: { authorization: basicHeader(pair.key, pair.secret) },
  });

const mint = (pair: Pair) =>
  send(gateway.url, '/keys', {
    method: 'POST',
    headers: { ...JSON_TYPE, authorization: basicHeader(pair.key, pair.secret) },
    body: JSON.stringify({ label: 'next generation' }),
  });

function minted(answer: HttpAnswer): Pair | undefined {
  if (answer.status !== 201) return undefined;
  const [view] = (answer.json as { data: Pair[] }).data;
  return view;
}

/** Five generations of GET, GET, POST /keys, each with the pair the last one made. */
async function generations(first: Pair): Promise<HttpAnswer[]> {
  const answers: HttpAnswer[] = [];
  let pair = first;
  for (let generation = 0; generation < 5; generation += 1) {
    answers.push(await get(pair), await get(pair));
    const made = await mint(pair);
    answers.push(made);
    pair = minted(made) ?? pair;
  }
  return answers;
}

const admitted = (answers: readonly HttpAnswer[]) =>
  answers.filter((a) => a.status < 400).map((a) => a.status);

describe('a subject-wide rate limit', () => {
  it('gives a subject no more than its budget however many pairs it mints (the issue’s five generations)', async () => {
    const { pair } = await freshSubject();
    const started = performance.now();
    const answers = await generations(pair);
    const elapsedMs = performance.now() - started;
    expect(admitted(answers)).toEqual([200, 200, 201, 200, 200]);
    const refused = answers[5];
    const limit = '"credential";r=1;t=2400, "subject";r=0;t=720';
    expect([
      refused?.status,
      refused?.headers['ratelimit-policy'],
      withinLimitClock(refused?.headers.ratelimit, limit, elapsedMs),
    ]).toEqual([429, '"credential";q=3;w=3600, "subject";q=5;w=3600', limit]);
    const metrics = await (await fetch(`${gateway.adminUrl ?? ''}/metrics`)).text();
    expect(metrics).toMatch(/^gateway_rate_limited_total\{policy="subject"\} \d+$/m);
  });

  it('takes a subject’s budget from the rate_limit of its subject hash, across all its pairs', async () => {
    const { subject, pair } = await freshSubject();
    await redis.hset(keys.subject(subject), 'rate_limit', `4/${HOUR}`);
    const answers = await generations(pair);
    expect(admitted(answers)).toEqual([200, 200, 201, 200]);
  });

  it('lifts one key’s own limit with its rate_limit, never the subject’s', async () => {
    const { subject, pair } = await freshSubject();
    await redis.hset(keys.key(pair.key, subject), 'rate_limit', 'none');
    const statuses: number[] = [];
    for (let i = 0; i < PER_SUBJECT + 1; i += 1) statuses.push((await get(pair)).status);
    expect(statuses).toEqual([...Array<number>(PER_SUBJECT).fill(200), 429]);
  });
});

describe('a malformed rate_limit override', () => {
  it('is logged once per hash, with the hash and the value, however many requests read it', async () => {
    const first = await freshSubject();
    const second = await freshSubject();
    await redis.hset(keys.key(first.pair.key, first.subject), 'rate_limit', '10 per minute');
    for (let i = 0; i < 3; i += 1) expect((await get(first.pair)).status).toBe(200);
    await redis.hset(keys.subject(second.subject), 'rate_limit', 'soon');
    await get(second.pair);
    const msg = 'rate limit override ignored: not <requests>/<periodSec>[,<burst>] or none';
    // Lines arrive in order: once the second hash's line is in, every line of the first is.
    await gateway.waitForLog(msg, { redis_key: keys.subject(second.subject) });
    const lines = gateway.logs.filter((l) => l.msg === msg);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        redis_key: keys.key(first.pair.key, first.subject),
        value: '10 per minute',
      }),
      expect.objectContaining({
        level: 40,
        redis_key: keys.subject(second.subject),
        value: 'soon',
      }),
    ]);
  });
});

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import bcrypt from 'bcrypt';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { median } from '../support/median.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import {
  putUser,
  revokeAsAnotherService,
  seedKey,
  TEST_BCRYPT_COST,
  uniquePrefix,
} from '../support/seed-redis.js';
import { issueToken, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Instant revocation across instances (issue 3, part 4): two gateway processes share one
// Redis and key prefix. A pair revoked through one (API, CLI, or a direct write by another
// service) stops working on the other long before the 300 s cache TTL would let it go. No
// clock is read for that: every test here times out long before the TTL, so a 401 it sees at
// all can only come from the revocation, never from the cache entry's expiry.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('revoke2');
const CACHE_TTL_SEC = 300;
const TRIALS = 25;

let upstream: EchoUpstream;
let gatewayA: GatewayProcess;
let gatewayB: GatewayProcess;
let yaml: string;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  const signing = await generateSigningKey();
  yaml = gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: redisUrl, keyPrefix: prefix },
    signingKeyPem: signing.pem,
    config: {
      auth: { basic: { cache: { ttlSec: CACHE_TTL_SEC } } },
      logging: { level: 'info', requests: false },
    },
  });
  [gatewayA, gatewayB] = await Promise.all([startGateway(yaml), startGateway(yaml)]);
  await untilSubscribers(redisUrl, prefix, 2);
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await Promise.all([gatewayA?.stop(), gatewayB?.stop()]);
  await upstream?.close();
});

interface Pair {
  readonly key: string;
  readonly secret: string;
  readonly subject: string;
}

let pairs = 0;

async function seedPair(subject = `subject-${(pairs += 1)}`): Promise<Pair> {
  const pair = {
    key: `ak_rev${randomBytes(9).toString('hex')}`,
    secret: randomBytes(24).toString('hex'),
    subject,
  };
  await seedKey(redisUrl, prefix, pair);
  return pair;
}

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

const accounts = (gateway: GatewayProcess, pair: Pair): Promise<HttpAnswer> =>
  send(gateway.url, '/accounts', { headers: basic(pair) });

/** A few requests to each gateway: the pair is verified once and then answered from cache. */
async function warm(pair: Pair, times = 3): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    for (const gateway of [gatewayA, gatewayB]) {
      const res = await accounts(gateway, pair);
      if (res.status !== 200) throw new Error(`warming ${pair.key}: ${res.status} ${res.body}`);
    }
  }
}

/** Replaces the stored hash without announcing it: only a cache can still accept the pair. */
async function swapHashSilently(pair: Pair): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    await redis.hset(redisLayout(prefix).key(pair.key, pair.subject), {
      secret_hash: await bcrypt.hash('some-other-secret', TEST_BCRYPT_COST),
    });
  } finally {
    redis.disconnect();
  }
}

/**
 * Sends awaited requests to `gateway` back to back until one answers 401; resolves with
 * the milliseconds from `since` to that answer (a figure, not a bound: see above).
 */
async function untilRejected(
  gateway: GatewayProcess,
  pair: Pair,
  since: number,
): Promise<{ elapsedMs: number; answer: HttpAnswer }> {
  for (;;) {
    const answer = await accounts(gateway, pair);
    const elapsedMs = performance.now() - since;
    if (answer.status === 401) return { elapsedMs, answer };
    if (answer.status !== 200) throw new Error(`unexpected ${answer.status}: ${answer.body}`);
  }
}

describe('a pair shared by two gateways', () => {
  it('works on both, and from their caches', async () => {
    const pair = await seedPair();
    await warm(pair);
    await swapHashSilently(pair);
    // Redis no longer holds a hash this secret matches: only the caches answer 200 now.
    for (const gateway of [gatewayA, gatewayB])
      expect((await accounts(gateway, pair)).status).toBe(200);
  });

  it("stops working on gateway B once revoked through gateway A's API", async () => {
    const pair = await seedPair();
    await warm(pair);
    const started = performance.now();
    const revoked = await send(gatewayA.url, `/keys/${pair.key}?force=true`, {
      method: 'DELETE',
      headers: basic(pair),
    });
    expect(revoked.status).toBe(200);
    const onB = await untilRejected(gatewayB, pair, started);
    expectGatewayError(onB.answer, 'invalid_credentials');
    const onA = await untilRejected(gatewayA, pair, started);
    expectGatewayError(onA.answer, 'invalid_credentials');
  });

  it('stops working on both once revoked with the CLI (keys revoke)', async () => {
    const pair = await seedPair();
    await warm(pair);
    const config = writeConfig(yaml);
    const started = performance.now();
    const cli = await runCli(['keys', 'revoke', pair.key, '--config', config]);
    expect(cli).toMatchObject({ code: 0, stdout: `revoked ${pair.key}\n` });
    for (const gateway of [gatewayA, gatewayB]) {
      const { answer } = await untilRejected(gateway, pair, started);
      expectGatewayError(answer, 'invalid_credentials');
    }
  });

  it('stops working on both once another service revokes it directly in Redis as documented', async () => {
    const pair = await seedPair();
    await warm(pair);
    const started = performance.now();
    await revokeAsAnotherService(redisUrl, prefix, pair.key, pair.subject);
    for (const gateway of [gatewayA, gatewayB]) {
      const { answer } = await untilRejected(gateway, pair, started);
      expectGatewayError(answer, 'invalid_credentials');
    }
    // The other gateways' view of the pair agrees: listed as revoked.
    const spare = await seedPair(pair.subject);
    const listed = await send(gatewayB.url, '/keys', {
      headers: basic(spare),
    });
    expect((listed.json as { data: { key: string; status: string }[] }).data).toContainEqual(
      expect.objectContaining({ key: pair.key, status: 'revoked' }),
    );
  });

  it('accepts a token issued by gateway A on gateway B (one signing key)', async () => {
    await putUser(redisUrl, prefix, {
      username: 'shared',
      subject: 'subject-shared',
      password: 'shared-pass-1',
    });
    const token = await issueToken(gatewayA.url, 'shared', 'shared-pass-1');
    const res = await send(gatewayB.url, '/accounts', {
      headers: { authorization: bearerHeader(token) },
    });
    expect(res.status).toBe(200);
  });
});

describe('propagation time (benchmark figure, not a timed assertion)', () => {
  it(`revokes through A and sees B reject the pair well before the cache TTL, over ${TRIALS} trials`, async () => {
    const fromRequest: number[] = [];
    const fromAnswer: number[] = [];
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const pair = await seedPair();
      await warm(pair, 2);
      const started = performance.now();
      const revoked = await send(gatewayA.url, `/keys/${pair.key}?force=true`, {
        method: 'DELETE',
        headers: basic(pair),
      });
      const answered = performance.now();
      expect(revoked.status).toBe(200);
      const { elapsedMs } = await untilRejected(gatewayB, pair, started);
      fromRequest.push(elapsedMs);
      fromAnswer.push(Math.max(0, elapsedMs - (answered - started)));
    }
    const ms = (value: number): string => value.toFixed(1);
    console.log(
      `revocation propagation A -> B over ${TRIALS} trials (cache TTL ${CACHE_TTL_SEC} s): ` +
        `from DELETE sent to B's first 401: median ${ms(median(fromRequest))} ms, worst ${ms(Math.max(...fromRequest))} ms; ` +
        `from A's 200 to B's first 401: median ${ms(median(fromAnswer))} ms, worst ${ms(Math.max(...fromAnswer))} ms`,
    );
  }, 60_000);
});

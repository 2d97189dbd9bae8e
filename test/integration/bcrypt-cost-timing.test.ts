import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { median } from '../support/median.js';
import { putUser, seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';

// Existence must not leak through bcrypt's cost. The gateway runs at cost 9; the pair and
// the user were written at cost 4 (32 times less work per compare), as another writer or an
// older configuration leaves them. A wrong secret for them must take about as long as an
// unknown key or username, which costs one compare against the dummy hash at cost 9.
//
// Timings are compared as ratios of medians, never against a wall-clock bound: 4 against 9
// is 32x in work, so a ratio within [0.5, 2] holds on a loaded machine while a known
// credential answered at its own cost (about a tenth of the time here) falls far outside.

const CONFIGURED_COST = 9;
const SAMPLES = 11;
const LOW = 0.5;
const HIGH = 2;

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('costtiming');
const PAIR = { key: 'ak_cheap', secret: 'cheap-secret-0123456789', subject: 'cheap' };
const USER = { username: 'cheap-user', subject: 'cheap', password: 'cheap-password-0123' };

let upstream: EchoUpstream;
let running: RunningGateway;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  // Both at TEST_BCRYPT_COST (4), below the gateway's.
  expect(TEST_BCRYPT_COST).toBeLessThan(CONFIGURED_COST);
  await seedKey(redisUrl, prefix, PAIR);
  await putUser(redisUrl, prefix, USER);
  running = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    bcryptCost: CONFIGURED_COST,
    // Every sample is a failure from one address; the lockout is tested elsewhere.
    config: { lockout: { enabled: false } },
  });
});

afterAll(async () => {
  await running?.close();
  await upstream?.close();
});

/** Milliseconds from sending to the end of the body; the answer must be 401. */
async function timed(request: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const res = await request();
  await res.arrayBuffer();
  const elapsedMs = performance.now() - started;
  expect(res.status).toBe(401);
  return elapsedMs;
}

const basic = (key: string, secret: string) => () =>
  fetch(`${running.url}/accounts`, { headers: { authorization: basicHeader(key, secret) } });

const login = (username: string, password: string) => () =>
  fetch(`${running.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });

/** Medians of the known and the unknown case, sampled in turn so that load drifts alike. */
async function medians(
  known: (i: number) => () => Promise<Response>,
  unknown: (i: number) => () => Promise<Response>,
): Promise<{ knownMs: number; unknownMs: number; ratio: number }> {
  const knownMs: number[] = [];
  const unknownMs: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    unknownMs.push(await timed(unknown(i)));
    knownMs.push(await timed(known(i)));
  }
  const result = { knownMs: median(knownMs), unknownMs: median(unknownMs) };
  return { ...result, ratio: result.knownMs / result.unknownMs };
}

describe('a credential hashed below the configured cost', () => {
  it('answers a wrong secret for its key in about the time of an unknown key (median ratio within [0.5, 2])', async () => {
    const { knownMs, unknownMs, ratio } = await medians(
      (i) => basic(PAIR.key, `wrong-secret-${i}`),
      (i) => basic(`ak_unknown${i}`, PAIR.secret),
    );
    console.log(
      `cost ${TEST_BCRYPT_COST} pair under a gateway at ${CONFIGURED_COST}: wrong secret ` +
        `${knownMs.toFixed(1)} ms, unknown key ${unknownMs.toFixed(1)} ms (median of ${SAMPLES})`,
    );
    expect(ratio).toBeGreaterThanOrEqual(LOW);
    expect(ratio).toBeLessThanOrEqual(HIGH);
  });

  it('answers a wrong password for its user in about the time of an unknown username (median ratio within [0.5, 2])', async () => {
    const { knownMs, unknownMs, ratio } = await medians(
      (i) => login(USER.username, `wrong-password-${i}`),
      (i) => login(`unknown-user-${i}`, USER.password),
    );
    console.log(
      `cost ${TEST_BCRYPT_COST} user under a gateway at ${CONFIGURED_COST}: wrong password ` +
        `${knownMs.toFixed(1)} ms, unknown username ${unknownMs.toFixed(1)} ms (median of ${SAMPLES})`,
    );
    expect(ratio).toBeGreaterThanOrEqual(LOW);
    expect(ratio).toBeLessThanOrEqual(HIGH);
  });
});

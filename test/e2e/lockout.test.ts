import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError, expectLockRetryAfter } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { withoutRequestId, type HttpAnswer } from '../support/http-answer.js';
import { BCRYPT_COMPARES, scrapeMetric } from '../support/scrape-metric.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// Lockout after failed attempts, through a gateway process on the Redis store: a locked-out
// caller gets 429 before any bcrypt runs (counted on /metrics), an unknown key is locked out
// like a known one, and every failure and lock writes its log line. Each test sends from its
// own loopback addresses, so no test trips another's address counter.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('lockout');
const THRESHOLD = 3;
const LOCK_SEC = 60;
const OWNER = { key: 'ak_lockout_owner', secret: 'owner-secret-0123456789abcdefghij' };
const CACHED = { key: 'ak_lockout_cached', secret: 'cached-secret-0123456789abcdefghi' };
const CAROL = { username: 'carol', subject: 'subject-carol', password: 'carol-password-1' };

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await Promise.all([
    seedKey(redisUrl, prefix, { ...OWNER, subject: 'owner' }),
    seedKey(redisUrl, prefix, { ...CACHED, subject: 'cached' }),
    putUser(redisUrl, prefix, CAROL),
  ]);
  const limit = { threshold: THRESHOLD, maxLockSec: LOCK_SEC };
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      config: {
        lockout: {
          initialLockSec: LOCK_SEC,
          basic: { keyAddress: limit },
          token: { usernameAddress: limit },
        },
        logging: { level: 'info', requests: false },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

const get = (key: string, secret: string, from: string): Promise<HttpAnswer> =>
  send(gateway.url, '/accounts', { headers: { authorization: basicHeader(key, secret) }, from });

const compares = (): Promise<number> => scrapeMetric(gateway, BCRYPT_COMPARES);

/** Log lines with this msg whose `field` is `value`, once `count` of them have arrived. */
async function linesOf(msg: string, field: string, value: string, count: number) {
  const matching = () => gateway.logs.filter((l) => l.msg === msg && l[field] === value);
  // Logs are flushed in batches: wait for the gateway's next flush rather than guess.
  while (matching().length < count) await new Promise((resolve) => setTimeout(resolve, 50));
  return matching();
}

describe('lockout of a Basic key from one address', () => {
  it('answers the right secret 429 with Retry-After once the pair is locked, and runs no bcrypt for it', async () => {
    const from = '127.0.2.1';
    const before = await compares();
    for (let i = 0; i < THRESHOLD; i += 1)
      expectGatewayError(await get(OWNER.key, `wrong-${i}`, from), 'invalid_credentials');
    expect(await compares()).toBe(before + THRESHOLD);

    const refused = await get(OWNER.key, OWNER.secret, from);
    expectGatewayError(refused, 'rate_limited', { message: 'Too many requests; retry later.' });
    expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
    expect(await compares()).toBe(before + THRESHOLD);

    // The owner from anywhere else is not affected: the key-wide threshold is far higher.
    expect((await get(OWNER.key, OWNER.secret, '127.0.2.2')).status).toBe(200);
  });

  it('locks out an unknown key exactly like a known one, answer for answer', async () => {
    const known: HttpAnswer[] = [];
    const unknown: HttpAnswer[] = [];
    for (let i = 0; i <= THRESHOLD; i += 1) {
      known.push(await get(OWNER.key, `guess-${i}`, '127.0.2.10'));
      unknown.push(await get('ak_never_issued', `guess-${i}`, '127.0.2.11'));
    }
    const statuses = [...Array<number>(THRESHOLD).fill(401), 429];
    expect(known.map((a) => a.status)).toEqual(statuses);
    expect(unknown.map((a) => a.status)).toEqual(statuses);
    for (const [i, answer] of unknown.entries()) {
      const twin = known[i] as HttpAnswer;
      expect(withoutRequestId(answer.json)).toEqual(withoutRequestId(twin.json));
      expect(Object.keys(answer.headers).sort()).toEqual(Object.keys(twin.headers).sort());
      expect(answer.headers['retry-after']).toBe(twin.headers['retry-after']);
    }
  });

  it('writes one "authentication failed" line per failure and one "locked out" line, never the secret', async () => {
    const from = '127.0.2.20';
    for (let i = 0; i < THRESHOLD; i += 1) await get(OWNER.key, `logged-guess-${i}`, from);
    const failures = await linesOf('authentication failed', 'client_address', from, THRESHOLD);
    expect(failures).toHaveLength(THRESHOLD);
    for (const line of failures) {
      expect(line).toMatchObject({
        level: 40,
        scheme: 'basic',
        client_address: from,
        key: OWNER.key,
        reason: 'invalid_credentials',
      });
    }
    const [locked] = await linesOf('locked out', 'client_address', from, 1);
    expect(locked).toMatchObject({
      scheme: 'basic',
      client_address: from,
      key: OWNER.key,
      scope: 'basic_key_address',
      lock_sec: LOCK_SEC,
      failures: THRESHOLD,
    });
    expect(gateway.output()).not.toContain('logged-guess-');
  });

  it('keeps serving a pair already verified and cached, from the locked-out address too', async () => {
    const from = '127.0.2.30';
    expect((await get(CACHED.key, CACHED.secret, from)).status).toBe(200);
    for (let i = 0; i < THRESHOLD; i += 1) await get(CACHED.key, `wrong-${i}`, from);
    expect((await get(CACHED.key, 'one-more-wrong', from)).status).toBe(429);
    // A cache hit is no guess: it skips the lockout (and Redis, and bcrypt) altogether.
    const before = await compares();
    expect((await get(CACHED.key, CACHED.secret, from)).status).toBe(200);
    expect(await compares()).toBe(before);
  });

  it('counts metrics: failures by reason, locks by scope', async () => {
    const res = await fetch(`${gateway.adminUrl ?? ''}/metrics`);
    const text = await res.text();
    expect(text).toMatch(
      /^gateway_auth_failures_total\{scheme="basic",reason="invalid_credentials"\} \d+$/m,
    );
    expect(text).toMatch(/^gateway_lockouts_total\{scope="basic_key_address"\} \d+$/m);
    expect(text).toMatch(/^gateway_lockout_refusals_total\{scope="basic_key_address"\} \d+$/m);
  });
});

describe('lockout at POST /auth/token', () => {
  const login = (password: string, from: string) =>
    send(gateway.url, '/auth/token', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ username: CAROL.username, password }),
      from,
    });

  it('answers the right password 429 once (username, address) is locked, and runs no bcrypt for it', async () => {
    const from = '127.0.2.40';
    for (let i = 0; i < THRESHOLD; i += 1)
      expect((await login(`wrong-${i}`, from)).status).toBe(401);
    const before = await compares();
    const refused = await login(CAROL.password, from);
    expectGatewayError(refused, 'rate_limited');
    expectLockRetryAfter(refused.headers['retry-after'], LOCK_SEC);
    expect(await compares()).toBe(before);
    expect((await login(CAROL.password, '127.0.2.41')).status).toBe(200);
    const [line] = await linesOf('authentication failed', 'client_address', from, THRESHOLD);
    expect(line).toMatchObject({ scheme: 'token', username: CAROL.username });
  });
});

describe('a flood of random key ids from a refused address', () => {
  it('answers each 429 and leaves no Redis key behind for any of the ids', async () => {
    // The address counter at its threshold with attempts in flight, as after a lock ends while
    // the flood goes on: Redis refuses each id (a refusal the process does not remember, since
    // those attempts may succeed), so each one reaches the lockout script.
    const from = '127.0.2.50';
    const admin = new Redis(redisUrl);
    try {
      const counter = redisLayout(prefix).lockoutCounter({
        scope: 'basic_address',
        id: '',
        network: from,
      });
      const [sec, usec] = await admin.time();
      const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
      await admin.hset(counter, { f: 0, p: 50, pt: nowMs, lu: 0 });
      await admin.pexpire(counter, 60_000);
      const ids = Array.from({ length: 300 }, () => `ak_flood${randomBytes(12).toString('hex')}`);
      for (let at = 0; at < ids.length; at += 20) {
        const answers = await Promise.all(
          ids.slice(at, at + 20).map((id) => get(id, 'any-secret', from)),
        );
        expect(answers.map((a) => a.status)).toEqual(answers.map(() => 429));
      }
      expect(await admin.keys(`${prefix}*ak_flood*`)).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });
});

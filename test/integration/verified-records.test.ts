import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { generateKeyPair } from '../../src/credentials/generate-key-pair.js';
import { newFleetKeyText, parseFleetKey } from '../../src/credentials/verified-record.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { pollStatus } from '../support/poll-status.js';
import { BCRYPT_COMPARES, sample } from '../support/scrape-metric.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// Two gateways on one Redis, as two processes of a fleet: what one proves with bcrypt, the
// other proves with the record; what a writer changes in Redis, both refuse at once.

const redisUrl = inject('redisUrl');

let upstream: EchoUpstream;
let control: Redis;
let prefix: string;
let layout: ReturnType<typeof redisLayout>;
const running: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startEchoUpstream();
  control = new Redis(redisUrl);
});

afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.close()));
  control.disconnect();
  await upstream.close();
});

beforeEach(async () => {
  await Promise.all(running.splice(0).map((gateway) => gateway.close()));
  prefix = uniquePrefix('records');
  layout = redisLayout(prefix);
});

async function gateway(records: Record<string, unknown> = {}): Promise<RunningGateway> {
  const started = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    config: { auth: { basic: { cache: { ttlSec: 60 }, verifiedRecords: records } } },
  });
  running.push(started);
  return started;
}

function request(at: RunningGateway, key: string, secret: string): Promise<Response> {
  return fetch(`${at.url}/accounts`, { headers: { authorization: basicHeader(key, secret) } });
}

async function status(at: RunningGateway, key: string, secret: string): Promise<number> {
  const answer = await request(at, key, secret);
  await answer.arrayBuffer();
  return answer.status;
}

async function metrics(at: RunningGateway): Promise<string> {
  return (await fetch(`${at.adminUrl}/metrics`)).text();
}

const checks = (text: string, result: string): number =>
  sample(text, `gateway_verified_record_checks_total{result="${result}"}`);

/** Waits until the pair's record is in Redis (written after the answer, without waiting). */
async function recordOf(key: string, subject: string): Promise<string> {
  for (;;) {
    const record = await control.hget(layout.key(key, subject), 'verified');
    if (record !== null) return record;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function seeded(subject = 'alice', extra: { secret?: string } = {}) {
  const pair = { ...generateKeyPair(subject), ...extra, subject };
  await seedKey(redisUrl, prefix, pair);
  return pair;
}

describe('verified records on Redis, across gateways', () => {
  it('lets a second gateway answer a pair the first one proved, without a bcrypt run', async () => {
    const pair = await seeded();
    const first = await gateway();
    expect(await status(first, pair.key, pair.secret)).toBe(200);
    const record = await recordOf(pair.key, pair.subject);
    const second = await gateway();

    expect(await status(second, pair.key, pair.secret)).toBe(200);

    const seen = await metrics(second);
    expect(sample(seen, BCRYPT_COMPARES)).toBe(0);
    expect(checks(seen, 'hit')).toBe(1);
    expect(
      sample(await metrics(first), 'gateway_verified_record_writes_total{result="written"}'),
    ).toBe(1);
    // The fleet key both used is the one kept in Redis.
    const fleet = parseFleetKey((await control.get(layout.fleetKey)) ?? '');
    expect(record.startsWith(`v1.${fleet?.id ?? 'none'}.`)).toBe(true);
  });

  it('refuses a record forged in Redis and one copied from another pair, each at the cost of a wrong secret', async () => {
    const alice = await seeded('alice');
    const bob = await seeded('bob');
    const first = await gateway();
    expect(await status(first, alice.key, alice.secret)).toBe(200);
    const aliceRecord = await recordOf(alice.key, alice.subject);
    const [, id, end] = aliceRecord.split('.');
    const forged = `v1.${id ?? ''}.${end ?? ''}.${randomBytes(16).toString('base64url')}`;
    await control.hset(layout.key(alice.key, alice.subject), 'verified', forged);
    await control.hset(layout.key(bob.key, bob.subject), 'verified', aliceRecord);
    const second = await gateway();

    expect(await status(second, alice.key, bob.secret)).toBe(401);
    expect(await status(second, bob.key, alice.secret)).toBe(401);
    expect(await status(second, bob.key, bob.secret)).toBe(200);

    const seen = await metrics(second);
    expect(sample(seen, BCRYPT_COMPARES)).toBe(3);
    expect(checks(seen, 'refused')).toBe(3);
    expect(checks(seen, 'hit')).toBe(0);
  });

  it('refuses on every gateway a pair a writer revoked, expired or gave a new secret, its record still there', async () => {
    const revoked = await seeded('rita');
    const expired = await seeded('eric');
    const rehashed = await seeded('hana');
    const first = await gateway();
    const second = await gateway();
    for (const pair of [revoked, expired, rehashed]) {
      expect(await status(first, pair.key, pair.secret)).toBe(200);
      await recordOf(pair.key, pair.subject);
    }
    // As a writer would, leaving the verified field where it is; the PUBLISH drops the caches.
    const past = new Date(Date.now() - 1000).toISOString();
    await control.hset(layout.key(revoked.key, revoked.subject), 'status', 'revoked');
    await control.hset(layout.key(expired.key, expired.subject), 'expires_at', past);
    await control.hset(
      layout.key(rehashed.key, rehashed.subject),
      'secret_hash',
      '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq',
    );
    await untilSubscribers(redisUrl, prefix, 2);
    for (const pair of [revoked, expired, rehashed])
      await control.publish(layout.channel, `key:${pair.key}`);
    const third = await gateway();

    // The cached gateways refuse once the message has reached them; the new one at once. Then
    // none lets the pair in again through its record.
    for (const pair of [revoked, expired, rehashed]) {
      for (const at of [first, second])
        await pollStatus(() => request(at, pair.key, pair.secret), 401, { deadlineMs: 5_000 });
      for (const at of [first, second, third])
        expect(await status(at, pair.key, pair.secret)).toBe(401);
    }
    expect(checks(await metrics(third), 'hit')).toBe(0);
  });

  it("keeps a record for a writer's pair marked secret_bits 128 or more, and none for an unmarked one", async () => {
    const marked = await seeded('mark', { secret: 'writer-made-secret-0' });
    const plain = await seeded('paul', { secret: 'writer-made-secret-1' });
    await control.hset(layout.key(marked.key, marked.subject), 'secret_bits', '128');
    const first = await gateway();
    expect(await status(first, marked.key, marked.secret)).toBe(200);
    expect(await status(first, plain.key, plain.secret)).toBe(200);
    await recordOf(marked.key, marked.subject);
    const second = await gateway();

    expect(await status(second, marked.key, marked.secret)).toBe(200);
    expect(await status(second, plain.key, plain.secret)).toBe(200);

    expect(sample(await metrics(second), BCRYPT_COMPARES)).toBe(1);
    expect(await control.hget(layout.key(plain.key, plain.subject), 'verified')).toBeNull();
  });

  it('keeps no fleet key in Redis when one is configured, and makes records under it', async () => {
    const fleetKey = newFleetKeyText();
    const pair = await seeded();
    const first = await gateway({ fleetKey });
    expect(await status(first, pair.key, pair.secret)).toBe(200);
    const record = await recordOf(pair.key, pair.subject);
    const second = await gateway({ fleetKey });

    expect(await status(second, pair.key, pair.secret)).toBe(200);

    expect(sample(await metrics(second), BCRYPT_COMPARES)).toBe(0);
    expect(record.startsWith(`v1.${parseFleetKey(fleetKey)?.id ?? 'none'}.`)).toBe(true);
    expect(await control.exists(layout.fleetKey)).toBe(0);
  });

  it('neither reads nor writes records when they are off', async () => {
    const pair = await seeded();
    const on = await gateway();
    expect(await status(on, pair.key, pair.secret)).toBe(200);
    await recordOf(pair.key, pair.subject);
    const off = await gateway({ enabled: false });

    expect(await status(off, pair.key, pair.secret)).toBe(200);

    const seen = await metrics(off);
    expect(sample(seen, BCRYPT_COMPARES)).toBe(1);
    expect(checks(seen, 'hit') + checks(seen, 'absent')).toBe(0);
  });
});

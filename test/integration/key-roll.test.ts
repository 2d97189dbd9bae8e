import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import type { KeyRecord } from '../../src/credentials/credential-store.js';
import { generateKeyPair } from '../../src/credentials/generate-key-pair.js';
import { recordEnd } from '../../src/credentials/verified-record.js';
import { ROLL_MESSAGES } from '../../src/credentials/key-roll.js';
import { KEY_NOT_FOUND_MESSAGE } from '../../src/errors/gateway-error.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { pollStatus } from '../support/poll-status.js';
import { redisConfig } from '../support/redis-config.js';
import { sample } from '../support/scrape-metric.js';
import { TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// POST /keys/{key}/roll through gateways in this process, on a clock the test moves: the new
// pair works at once, the old one through its overlap and not a moment after, on both stores;
// on Redis, also on a gateway that had the old pair cached (or proved by its verified record)
// with its former end.

const redisUrl = inject('redisUrl');
const START_MS = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
const MAX_ACTIVE = 4;

interface Pair {
  readonly key: string;
  readonly secret: string;
}

/** A pair of the gateway's own form (so a verified record may prove it), and its record. */
async function newPair(
  subject: string,
  overrides: Partial<KeyRecord> = {},
): Promise<{ pair: Pair; record: KeyRecord }> {
  const pair = generateKeyPair(subject);
  return {
    pair,
    record: {
      key: pair.key,
      subject,
      secretHash: await bcrypt.hash(pair.secret, TEST_BCRYPT_COST),
      label: 'deploy bot',
      status: 'active',
      createdAt: iso(START_MS - 86_400_000),
      scopes: [],
      ...overrides,
    },
  };
}

const basic = (pair: Pair) => ({ authorization: basicHeader(pair.key, pair.secret) });

interface RolledView {
  key: string;
  secret: string;
  label: string;
  status: string;
  expires_at: string | null;
  scopes: string[];
  previous: { key: string; status: string; expires_at: string | null; revoked_at?: string };
}

/** A pair from POST /keys's answer. */
function madeOf(answer: { json: unknown }): Pair {
  const [view] = (answer.json as { data: Pair[] }).data;
  if (view === undefined) throw new Error('no pair in the answer');
  return view;
}

function rolledOf(json: unknown): RolledView {
  const [view] = (json as { data: RolledView[] }).data;
  if (view === undefined) throw new Error('no pair in the answer');
  return view;
}

let upstream: EchoUpstream;
const running: RunningGateway[] = [];
const clock = { ms: START_MS };
const now = (): number => clock.ms;

beforeAll(async () => {
  upstream = await startEchoUpstream();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((gateway) => gateway.close()));
});

afterAll(async () => {
  await upstream?.close();
});

async function start(backend: Backend): Promise<RunningGateway> {
  const gateway = await startInProcessGateway({
    redisUrl,
    keyPrefix: uniquePrefix('rollgw'),
    upstreamUrl: upstream.url,
    now,
    backend,
    cacheTtlSec: 300,
    config: { keys: { maxActivePerSubject: MAX_ACTIVE } },
  });
  running.push(gateway);
  return gateway;
}

const BACKENDS = {
  memory: (keys: KeyRecord[]): Promise<Backend> =>
    Promise.resolve(createMemoryBackend({ seed: { keys }, now })),
  redis: async (keys: KeyRecord[]): Promise<Backend> => {
    const backend = createRedisBackend(redisConfig(redisUrl, uniquePrefix('roll')), { now });
    for (const record of keys) await backend.credentials.createKey(record, 10);
    return backend;
  },
};

const rollPath = (key: string) => `/keys/${key}/roll`;
/** POST /keys by `as`, with `body`. */
const postKeys = (at: RunningGateway, as: Pair, body: unknown) =>
  send(at.url, '/keys', {
    method: 'POST',
    headers: { ...basic(as), ...JSON_TYPE },
    body: JSON.stringify(body),
  });
const accounts = (at: RunningGateway, pair: Pair) =>
  send(at.url, '/accounts', { headers: basic(pair) });

describe.each(Object.entries(BACKENDS))('POST /keys/{key}/roll (%s store)', (_, backend) => {
  async function setup(overrides: Partial<KeyRecord> = {}) {
    clock.ms = START_MS;
    const held = await newPair('holder', { scopes: ['accounts:read'], ...overrides });
    const stranger = await newPair('stranger');
    const gateway = await start(await backend([held.record, stranger.record]));
    const roll = (key: string, body?: unknown, as: Pair = held.pair) =>
      send(gateway.url, rollPath(key), {
        method: 'POST',
        headers: { ...basic(as), ...(body === undefined ? {} : JSON_TYPE) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    return { gateway, held: held.pair, stranger: stranger.pair, roll };
  }

  it('answers 201 with a working new pair; the old one works through the overlap, then is refused', async () => {
    const { gateway, held, roll } = await setup({ expiresAt: iso(START_MS + 86_400_000) });
    // Cached before the roll, with the pair's former end.
    expect((await accounts(gateway, held)).status).toBe(200);

    const answer = await roll(held.key, { overlap_sec: 60 });

    expect(answer.status).toBe(201);
    expect(answer.headers.pragma).toBe('no-cache');
    const rolled = rolledOf(answer.json);
    expect(rolled).toMatchObject({
      label: 'deploy bot',
      status: 'active',
      expires_at: iso(START_MS + 86_400_000),
      scopes: ['accounts:read'],
      previous: { key: held.key, status: 'active', expires_at: iso(START_MS + 60_000) },
    });
    expect(rolled.key).not.toBe(held.key);
    expect((await accounts(gateway, rolled)).status).toBe(200);
    clock.ms = START_MS + 59_999;
    expect((await accounts(gateway, held)).status).toBe(200);

    clock.ms = START_MS + 60_000;
    expectGatewayError(await accounts(gateway, held), 'invalid_credentials');
    expect((await accounts(gateway, rolled)).status).toBe(200);
  });

  it('revokes the old pair at once with overlap_sec 0', async () => {
    const { gateway, held, roll } = await setup();
    expect((await accounts(gateway, held)).status).toBe(200);

    const rolled = rolledOf((await roll(held.key, { overlap_sec: 0 })).json);

    expect(rolled.previous).toMatchObject({ status: 'revoked', revoked_at: iso(START_MS) });
    expectGatewayError(await accounts(gateway, held), 'invalid_credentials');
    expect((await accounts(gateway, rolled)).status).toBe(200);
  });

  it('keeps the old pair an hour when the body is empty', async () => {
    const { held, roll } = await setup();
    const answer = await roll(held.key);
    expect(answer.status).toBe(201);
    expect(rolledOf(answer.json).previous.expires_at).toBe(iso(START_MS + 3_600_000));
  });

  it('never keeps the old pair past its own expiry, which the new one inherits', async () => {
    const endsAt = iso(START_MS + 120_000);
    const { held, roll } = await setup({ expiresAt: endsAt });
    const rolled = rolledOf((await roll(held.key, { overlap_sec: 86_400 })).json);
    expect(rolled.previous.expires_at).toBe(endsAt);
    expect(rolled.expires_at).toBe(endsAt);
  });

  it('refuses an overlap beyond 24 hours, or not a whole number of seconds, with 400, rolling nothing', async () => {
    const { gateway, held, roll } = await setup();
    for (const body of [{ overlap_sec: 86_401 }, { overlap_sec: -1 }, { overlap_sec: '60' }])
      expectGatewayError(await roll(held.key, body), 'bad_request', {
        message: ROLL_MESSAGES.overlap,
      });
    expectGatewayError(await roll(held.key, [60]), 'bad_request', { message: ROLL_MESSAGES.body });
    const listed = await send(gateway.url, '/keys', { headers: basic(held) });
    expect((listed.json as { data: unknown[] }).data).toHaveLength(1);
    expect((await accounts(gateway, held)).status).toBe(200);
  });

  it("answers another subject's pair like one that does not exist (404), leaving it as it was", async () => {
    const { gateway, stranger, roll } = await setup();
    for (const key of [stranger.key, 'ak_no_such_pair'])
      expectGatewayError(await roll(key, { overlap_sec: 0 }), 'not_found', {
        message: KEY_NOT_FOUND_MESSAGE,
      });
    expect((await accounts(gateway, stranger)).status).toBe(200);
  });

  it('refuses to roll a revoked pair (409)', async () => {
    const { gateway, held, roll } = await setup();
    const rolled = rolledOf((await roll(held.key, { overlap_sec: 0 })).json);
    expectGatewayError(await roll(held.key, {}, rolled), 'conflict', {
      message: ROLL_MESSAGES.ended,
    });
    expect((await accounts(gateway, rolled)).status).toBe(200);
  });

  it('lets a subject at its cap roll, but not roll again during the overlap (422)', async () => {
    const { gateway, held, roll } = await setup();
    for (let i = 1; i < MAX_ACTIVE; i += 1)
      expect((await postKeys(gateway, held, {})).status).toBe(201);
    const first = rolledOf((await roll(held.key, { overlap_sec: 60 })).json);
    expectGatewayError(await roll(first.key, {}, first), 'limit_exceeded');

    clock.ms = START_MS + 60_000;
    expect((await roll(first.key, {}, first)).status).toBe(201);
  });

  it('refuses a Basic caller a pair with scopes beyond its own, or one that outlives it (403)', async () => {
    const { gateway, held, roll } = await setup({ expiresAt: iso(START_MS + 600_000) });
    // Made by the held pair: `narrow` without its scope, `brief` with it; both end in a minute,
    // the held pair in ten.
    const narrow = madeOf(await postKeys(gateway, held, { scopes: [], expires_in: 60 }));
    const brief = madeOf(await postKeys(gateway, held, { expires_in: 60 }));

    expectGatewayError(await roll(held.key, {}, narrow), 'forbidden', {
      message: ROLL_MESSAGES.scopes,
    });
    expectGatewayError(await roll(held.key, {}, brief), 'forbidden', {
      message: ROLL_MESSAGES.outlive,
    });
    // A pair with no more scopes that ends no later, itself included, may be rolled.
    expect((await roll(narrow.key, {}, brief)).status).toBe(201);
    expect((await roll(brief.key, {}, brief)).status).toBe(201);
  });
});

describe('a roll on Redis, seen by other gateways', () => {
  let control: Redis;

  beforeAll(() => {
    control = new Redis(redisUrl);
  });

  afterAll(() => {
    control.disconnect();
  });

  it('gives the successor the rate_limit override a writer set on the rolled pair: a roll does not lift it', async () => {
    clock.ms = START_MS;
    const prefix = uniquePrefix('rollrate');
    const layout = redisLayout(prefix);
    const held = await newPair('limited');
    const backend = createRedisBackend(redisConfig(redisUrl, prefix), { now });
    try {
      await backend.credentials.createKey(held.record, 10);
      const override = JSON.stringify({ requests: 5, periodSec: 60 });
      await control.hset(layout.key(held.record.key, 'limited'), 'rate_limit', override);
      const next = generateKeyPair('limited');
      const rolled = await backend.credentials.rollKey(
        {
          key: held.record.key,
          successor: { key: next.key, secretHash: held.record.secretHash },
          at: iso(START_MS),
          overlapSec: 60,
        },
        10,
      );
      expect(rolled?.successor.key).toBe(next.key);
      expect(await control.hget(layout.key(next.key, 'limited'), 'rate_limit')).toBe(override);
    } finally {
      await backend.credentials.close();
    }
  });

  it('ends the old pair on a gateway that cached it before the roll, and on one its verified record convinces', async () => {
    clock.ms = START_MS;
    const prefix = uniquePrefix('rollfleet');
    const held = await newPair('fleet');
    const writer = createRedisBackend(redisConfig(redisUrl, prefix), { now });
    await writer.credentials.createKey(held.record, 10);
    await writer.credentials.close();
    const gateway = async (): Promise<RunningGateway> => {
      const started = await startInProcessGateway({
        redisUrl,
        keyPrefix: prefix,
        upstreamUrl: upstream.url,
        now,
        cacheTtlSec: 300,
      });
      running.push(started);
      return started;
    };
    const roller = await gateway();
    const cached = await gateway();
    await untilSubscribers(redisUrl, prefix, 2);

    // Cached by one gateway for 300 s, the pair having no end; its record written for all.
    expect((await accounts(cached, held.pair)).status).toBe(200);
    let record: string | null = null;
    while (record === null) {
      record = await control.hget(redisLayout(prefix).key(held.pair.key, 'fleet'), 'verified');
      if (record === null) await new Promise((resolve) => setTimeout(resolve, 5));
    }

    const answer = await send(roller.url, rollPath(held.pair.key), {
      method: 'POST',
      headers: { ...basic(held.pair), ...JSON_TYPE },
      body: JSON.stringify({ overlap_sec: 30 }),
    });
    expect(answer.status).toBe(201);

    // A gateway that never saw the pair proves it by its record during the overlap...
    const fresh = await gateway();
    expect((await accounts(fresh, held.pair)).status).toBe(200);
    const metrics = await (await fetch(`${fresh.adminUrl}/metrics`)).text();
    expect(sample(metrics, 'gateway_verified_record_checks_total{result="hit"}')).toBe(1);
    // ...by a record that ends later than the pair now does, and proves nothing after it.
    expect(recordEnd(record)).toBeGreaterThan(START_MS + 30_000);

    clock.ms = START_MS + 30_000;
    expectGatewayError(await accounts(fresh, held.pair), 'invalid_credentials');
    // The other gateway heard of the roll: nothing else refuses the pair before its cache
    // entry's 300 s are up.
    const refused = await pollStatus(
      () => fetch(`${cached.url}/accounts`, { headers: basic(held.pair) }),
      401,
    );
    expectGatewayError(refused.answer, 'invalid_credentials');
    expect((await accounts(cached, rolledOf(answer.json))).status).toBe(200);
  });
});

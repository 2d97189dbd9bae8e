import { Redis } from 'ioredis';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { capturedLogger } from '../support/captured-logger.js';
import { codeBlocks, readDoc, section } from '../support/markdown.js';
import { redisConfig } from '../support/redis-config.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { fieldValue, PortalClient } from '../support/portal-client.js';
import { sample } from '../support/scrape-metric.js';
import { putUser, seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';
import bcrypt from 'bcrypt';

// Issue 29, point 3: every pair change made through the API and the portal leaves exactly one
// event in the fleet's stream and one in its subject's, read raw from the run's Redis, with who,
// from where and on which host, never a secret or a hash; GET /keys/events pages a holder's own;
// the memory store keeps the same; an append that fails fails no change and loses no event.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('trail');
const layout = redisLayout(prefix);
const SECRET = 'trail-secret-0123456789abcdefghijklmnop';
const ALICE = { key: 'ak_trail_alice', secret: SECRET, subject: 'trail-alice', scopes: ['keys'] };
const BOB = { key: 'ak_trail_bob', secret: SECRET, subject: 'trail-bob', scopes: ['keys'] };
const ANN = { username: 'trail-ann', subject: ALICE.subject, password: 'ann-password-0123' };
/** The address every request of this file comes from (any of 127.0.0.0/8 on Linux). */
const FROM = '127.0.0.29';

let upstream: EchoUpstream;
let gateway: RunningGateway;
let redis: Redis;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  for (const pair of [ALICE, BOB]) await seedKey(redisUrl, prefix, pair);
  await putUser(redisUrl, prefix, { ...ANN, scopes: ['keys'] });
  gateway = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    config: { keys: { maxActivePerSubject: 50 } },
  });
  redis = new Redis(redisUrl);
});

afterAll(async () => {
  redis?.disconnect();
  await gateway?.close();
  await upstream?.close();
});

type Raw = Record<string, string>;

/** The entries of a stream after `after`, as the stream holds them: field -> value. */
async function entriesAfter(stream: string, after = '0-0'): Promise<(Raw & { id: string })[]> {
  const entries = await redis.xrange(stream, `(${after}`, '+');
  return entries.map(([id, flat]) => {
    const fields: Raw = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] ?? ''] = flat[i + 1] ?? '';
    return { id, ...fields };
  });
}

/** The id of the newest entry of a stream, or 0-0. */
async function newest(stream: string): Promise<string> {
  const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
  return last?.[0] ?? '0-0';
}

/**
 * Runs `act`, then the one event it left in the fleet's stream and the one in the subject's:
 * the same fields in both, and nothing else appended to either.
 */
async function oneEvent(subject: string, act: () => Promise<unknown>): Promise<Raw> {
  const fleetFrom = await newest(layout.auditEvents);
  const ownFrom = await newest(layout.subjectEvents(subject));
  await act();
  const fleet = await entriesAfter(layout.auditEvents, fleetFrom);
  const own = await entriesAfter(layout.subjectEvents(subject), ownFrom);
  expect(fleet).toHaveLength(1);
  expect(own).toHaveLength(1);
  const withoutId = ({ id, ...fields }: Raw & { id: string }): Raw => (id === '' ? {} : fields);
  const fields = withoutId(fleet[0] ?? { id: '' });
  expect(withoutId(own[0] ?? { id: '' })).toEqual(fields);
  return fields;
}

/** No field of an event holds a secret, nor any bcrypt hash. */
function expectNoSecret(fields: Raw, ...secrets: string[]): void {
  for (const value of Object.values(fields)) {
    expect(value).not.toMatch(/\$2[aby]\$/);
    for (const secret of secrets) expect(value).not.toContain(secret);
  }
}

const basic = (pair: { key: string; secret: string }) => ({
  authorization: basicHeader(pair.key, pair.secret),
});

async function api(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<HttpAnswer> {
  return send(gateway.url, path, {
    method,
    from: FROM,
    headers: { ...headers, ...(body === undefined ? {} : JSON_TYPE) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface PairView {
  key: string;
  secret: string;
  expires_at: string | null;
  previous?: { expires_at: string | null };
}
const pairOf = (answer: HttpAnswer): PairView => (answer.json as { data: [PairView] }).data[0];

describe('the audit trail of the API', () => {
  it('records a pair made, rolled and revoked by a Basic caller: one event each, never a secret', async () => {
    let made: HttpAnswer | undefined;
    const create = await oneEvent(ALICE.subject, async () => {
      made = await api('POST', '/keys', basic(ALICE), {
        label: 'ci',
        expires_in: 3600,
        scopes: ['keys'],
      });
    });
    expect(made?.status).toBe(201);
    const pair = pairOf(made as HttpAnswer);
    expect(create).toEqual({
      at: create.at,
      action: 'create',
      subject: ALICE.subject,
      key: pair.key,
      expires_at: pair.expires_at,
      scopes: 'keys',
      actor: `key:${ALICE.key}`,
      via: 'api',
      from: FROM,
      host: hostname(),
      request_id: made?.headers['x-request-id'],
    });
    expect(Date.parse(create.at ?? '')).not.toBeNaN();
    expectNoSecret(create, pair.secret, SECRET);

    let rolled: HttpAnswer | undefined;
    const roll = await oneEvent(ALICE.subject, async () => {
      rolled = await api('POST', `/keys/${pair.key}/roll`, basic(ALICE), { overlap_sec: 60 });
    });
    expect(rolled?.status).toBe(201);
    const successor = pairOf(rolled as HttpAnswer);
    expect(roll).toMatchObject({
      action: 'roll',
      subject: ALICE.subject,
      key: pair.key,
      successor: successor.key,
      expires_at: successor.expires_at,
      ends_at: successor.previous?.expires_at,
      actor: `key:${ALICE.key}`,
      via: 'api',
      from: FROM,
    });
    expectNoSecret(roll, successor.secret, pair.secret, SECRET);

    const revoke = await oneEvent(ALICE.subject, async () => {
      expect((await api('DELETE', `/keys/${successor.key}`, basic(ALICE))).status).toBe(200);
    });
    expect(revoke).toMatchObject({
      action: 'revoke',
      key: successor.key,
      actor: `key:${ALICE.key}`,
    });
    expect(Object.keys(revoke).sort()).toEqual(
      ['action', 'actor', 'at', 'from', 'host', 'key', 'request_id', 'subject', 'via'].sort(),
    );
  });

  it('names a token the gateway issued by its user', async () => {
    const token = await issueToken(gateway.url, ANN.username, ANN.password);
    const event = await oneEvent(ALICE.subject, async () => {
      expect((await api('POST', '/keys', { authorization: bearerHeader(token) })).status).toBe(201);
    });
    expect(event).toMatchObject({ action: 'create', actor: `user:${ANN.username}`, via: 'api' });
    expectNoSecret(event, token);
  });

  it('records nothing for a change refused', async () => {
    const fleetFrom = await newest(layout.auditEvents);
    expect((await api('DELETE', '/keys/ak_trail_nobody', basic(ALICE))).status).toBe(404);
    expect((await api('POST', '/keys', basic(ALICE), { scopes: ['admin'] })).status).toBe(403);
    expect(await entriesAfter(layout.auditEvents, fleetFrom)).toEqual([]);
  });
});

describe('the audit trail of the portal', () => {
  it('records a pair made, rolled and revoked in the portal as its user, from its address', async () => {
    const browser = new PortalClient(gateway.url);
    expect((await browser.post('/portal/sign-in', ANN)).status).toBe(303);
    let made: HttpAnswer | undefined;
    const create = await oneEvent(ALICE.subject, async () => {
      const form = (await browser.get('/portal/keys/new')).body;
      made = await browser.post('/portal/keys', {
        csrf: fieldValue(form, 'csrf') ?? '',
        nonce: fieldValue(form, 'nonce') ?? '',
        label: 'portal',
      });
    });
    expect(made?.status).toBe(201);
    const key = /id="new-key">([^<]+)</.exec(made?.body ?? '')?.[1] ?? '';
    const secret = /id="secret" class="secret">([^<]+)</.exec(made?.body ?? '')?.[1] ?? '';
    expect(secret).not.toBe('');
    expect(create).toMatchObject({
      action: 'create',
      subject: ALICE.subject,
      key,
      actor: `user:${ANN.username}`,
      via: 'portal',
      from: '127.0.0.1',
      host: hostname(),
      request_id: made?.headers['x-request-id'],
    });
    expectNoSecret(create, secret, ANN.password);

    const roll = await oneEvent(ALICE.subject, async () => {
      const page = (await browser.get(`/portal/keys/${key}/roll`)).body;
      const answer = await browser.post(`/portal/keys/${key}/roll`, {
        csrf: fieldValue(page, 'csrf') ?? '',
        nonce: fieldValue(page, 'nonce') ?? '',
        overlap_sec: '0',
      });
      expect(answer.status).toBe(201);
    });
    expect(roll).toMatchObject({
      action: 'roll',
      key,
      via: 'portal',
      actor: `user:${ANN.username}`,
    });
    expect(roll.ends_at).toBeDefined();

    const revoke = await oneEvent(ALICE.subject, async () => {
      const csrf = fieldValue((await browser.get('/portal/')).body, 'csrf') ?? '';
      const answer = await browser.post(`/portal/keys/${roll.successor ?? ''}/revoke`, { csrf });
      expect(answer.status).toBe(303);
    });
    expect(revoke).toMatchObject({ action: 'revoke', key: roll.successor, via: 'portal' });
  });
});

describe('GET /keys/events', () => {
  it("pages the caller's own events newest first, by last_id, as GET /keys pages its pairs", async () => {
    const mine = { ...BOB };
    const keys: string[] = [];
    for (let i = 0; i < 3; i += 1)
      keys.push(pairOf(await api('POST', '/keys', basic(mine), { label: `p${i}` })).key);
    const first = await api('GET', '/keys/events?limit=2', basic(mine));
    expect(first.status).toBe(200);
    const page = first.json as {
      meta: { count: number; limit: number; order: string; last_id: string };
      data: Raw[];
    };
    expect(page.meta).toEqual({
      count: 2,
      limit: 2,
      order: 'desc',
      last_id: page.data[1]?.id,
    });
    expect(page.data.map((e) => e.key)).toEqual([keys[2], keys[1]]);
    expect(page.data[0]).toEqual({
      id: page.data[0]?.id,
      at: page.data[0]?.at,
      action: 'create',
      actor: `key:${BOB.key}`,
      via: 'api',
      from: FROM,
      request_id: page.data[0]?.request_id,
      key: keys[2],
      scopes: 'keys',
    });
    const next = await api('GET', `/keys/events?limit=2&last_id=${page.meta.last_id}`, basic(mine));
    expect((next.json as { data: Raw[] }).data.map((e) => e.key)).toEqual([keys[0]]);
    const up = await api('GET', '/keys/events?order=asc', basic(mine));
    expect((up.json as { data: Raw[] }).data.map((e) => e.key)).toEqual(keys);
    expect((await api('HEAD', '/keys/events', basic(mine))).status).toBe(200);
  });

  it("shows a holder none of another subject's events", async () => {
    const answer = await api('GET', '/keys/events', basic(ALICE));
    const events = (answer.json as { data: Raw[] }).data;
    expect(events.length).toBeGreaterThan(0);
    expect(events.map((e) => e.actor)).not.toContain(`key:${BOB.key}`);
    const bobs = (await api('GET', '/keys/events', basic(BOB))).json as { data: Raw[] };
    expect(bobs.data.every((e) => e.actor === `key:${BOB.key}`)).toBe(true);
  });

  it('answers 400 to a cursor that is no event id, and 405 to a DELETE', async () => {
    const refused = await api('GET', '/keys/events?last_id=ak_trail_alice', basic(ALICE));
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ error: { code: 'bad_request' } });
    const deleted = await api('DELETE', '/keys/events', basic(ALICE));
    expect(deleted.status).toBe(405);
    expect(deleted.headers.allow).toBe('GET, HEAD');
  });
});

describe("a writer's events", () => {
  it('are read back as the gateway reads its own, when appended by the recipe of docs/redis-layout.md', async () => {
    const writerPrefix = uniquePrefix('trailwriter');
    const [recipe = ''] = codeBlocks(
      section(readDoc('docs/redis-layout.md'), '### Key events'),
      'text',
    );
    const commands = recipe
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split(' ').map((word) => word.replace(/^ag:/, writerPrefix)));
    expect(commands.map(([name]) => name)).toEqual([
      'MULTI',
      'XADD',
      'XTRIM',
      'EXEC',
      'MULTI',
      'XADD',
      'XTRIM',
      'PEXPIRE',
      'EXEC',
    ]);
    const writer = new Redis(redisUrl);
    try {
      for (const [name = '', ...args] of commands) await writer.call(name, ...args);
    } finally {
      writer.disconnect();
    }
    const backend = createRedisBackend(redisConfig(redisUrl, writerPrefix));
    try {
      const expected = {
        at: '2026-11-22T11:00:00.000Z',
        action: 'revoke',
        subject: 'alice',
        key: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
        actor: 'user:alice',
        via: 'webapp',
        from: '198.51.100.23',
        host: 'web-1',
      };
      const own = await backend.audit.read({ subject: 'alice', order: 'desc', count: 10 });
      expect(own).toEqual([{ ...expected, id: own[0]?.id }]);
      const fleet = await backend.audit.read({ order: 'desc', count: 10 });
      expect(fleet).toEqual([{ ...expected, id: fleet[0]?.id }]);
    } finally {
      await backend.credentials.close();
    }
  });
});

describe('the audit trail on the memory store', () => {
  let memory: RunningGateway | undefined;
  afterAll(async () => {
    await memory?.close();
  });

  it('keeps the same events in process, paged by GET /keys/events', async () => {
    const backend = createMemoryBackend({
      seed: { keys: [await seeded(ALICE)] },
    });
    memory = await startInProcessGateway({
      redisUrl,
      keyPrefix: uniquePrefix('trailmem'),
      upstreamUrl: upstream.url,
      backend,
    });
    const made = await send(memory.url, '/keys', { method: 'POST', headers: basic(ALICE) });
    const { key } = pairOf(made);
    await send(memory.url, `/keys/${key}`, { method: 'DELETE', headers: basic(ALICE) });
    const events = await send(memory.url, '/keys/events', { headers: basic(ALICE) });
    const data = (events.json as { data: Raw[] }).data;
    expect(data.map((e) => [e.action, e.key])).toEqual([
      ['revoke', key],
      ['create', key],
    ]);
    const fleet = await backend.audit.read({ order: 'asc', count: 10 });
    expect(fleet.map((e) => [e.action, e.subject, e.host])).toEqual([
      ['create', ALICE.subject, hostname()],
      ['revoke', ALICE.subject, hostname()],
    ]);
  });
});

describe('an audit event that cannot be written', () => {
  it('fails no change: the pair is made, the failure counted and the event logged whole', async () => {
    const memory = createMemoryBackend({ seed: { keys: [await seeded(ALICE)] } });
    const failing: Backend = {
      ...memory,
      audit: { ...memory.audit, append: () => Promise.reject(new Error('stream down')) },
    };
    const captured = capturedLogger('error');
    const broken = await startInProcessGateway({
      redisUrl,
      keyPrefix: uniquePrefix('trailfail'),
      upstreamUrl: upstream.url,
      backend: failing,
      logger: captured.logger,
    });
    try {
      const made = await send(broken.url, '/keys', { method: 'POST', headers: basic(ALICE) });
      expect(made.status).toBe(201);
      const { key, secret } = pairOf(made);
      expect(await memory.credentials.getKey(key)).toMatchObject({ status: 'active' });
      const line = await captured.until('audit event not written');
      expect(line).toMatchObject({
        level: 50,
        audit_event: { action: 'create', key, subject: ALICE.subject, actor: `key:${ALICE.key}` },
        cause: 'Error: stream down',
      });
      expect(JSON.stringify(line)).not.toContain(secret);
      const metrics = (await send(broken.adminUrl, '/metrics')).body;
      expect(sample(metrics, 'gateway_audit_write_failures_total')).toBe(1);
    } finally {
      await broken.close();
    }
  });
});

/** A pair as the memory store's seed holds it. */
async function seeded(pair: typeof ALICE) {
  return {
    key: pair.key,
    subject: pair.subject,
    secretHash: await bcrypt.hash(pair.secret, TEST_BCRYPT_COST),
    label: '',
    status: 'active' as const,
    createdAt: new Date().toISOString(),
    scopes: pair.scopes,
  };
}

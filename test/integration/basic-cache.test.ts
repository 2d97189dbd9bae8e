import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { errorEnvelope, GENERATED_REQUEST_ID } from '../support/expect-gateway-error.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { median } from '../support/median.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// A cost high enough that a skipped compare would show in the timings; the gateway's dummy
// hash (for unknown keys) is made with the configured cost, so both paths cost the same.
const BCRYPT_COST = 8;
const TIMING_SAMPLES = 15;

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cache');
const keys = redisLayout(prefix);
const pair = { key: 'ak_cached', secret: 'cached-secret-0123456789', subject: 'alice' };

let upstream: EchoUpstream;
let running: RunningGateway;
let control: Redis;

/** Writes the pair with the documented layout, its secret hashed at BCRYPT_COST. */
async function seedAtCost(entry: { key: string; secret: string; subject: string }): Promise<void> {
  await seedKey(redisUrl, prefix, entry);
  await control.hset(
    keys.key(entry.key, entry.subject),
    'secret_hash',
    await bcrypt.hash(entry.secret, BCRYPT_COST),
  );
}

function request(key: string, secret: string): Promise<Response> {
  return fetch(`${running.url}/accounts`, { headers: { authorization: basicHeader(key, secret) } });
}

/**
 * Records, through Redis MONITOR, every command that touches this file's keys (other test
 * files share the server, each under its own prefix). MONITOR streams commands in the order
 * the server ran them, so once a marker command shows up, everything before it has too.
 */
async function startRecording(): Promise<{
  commands: string[][];
  sync(): Promise<void>;
  stop(): void;
}> {
  const monitor = new Redis(redisUrl, { monitor: true, lazyConnect: true });
  const commands: string[][] = [];
  const waiting = new Map<string, () => void>();
  let markers = 0;
  monitor.on('error', (error: Error) => {
    // ioredis enters monitor mode one tick after Redis's +OK: a line from another client
    // that arrives in that tick trips its queue check. Such lines predate the recording (no
    // request of ours is sent before `monitoring`), so they are not needed here.
    if (!error.message.startsWith('Command queue state error')) throw error;
  });
  monitor.on('monitor', (_time: string, args: string[]) => {
    const marker = waiting.get(args[1] ?? '');
    if (args[0]?.toLowerCase() === 'exists' && marker !== undefined) {
      marker();
      return;
    }
    if (args.some((arg) => arg.startsWith(prefix))) commands.push(args);
  });
  const monitoring = new Promise<void>((resolve) => monitor.once('monitoring', () => resolve()));
  await monitor.connect();
  await monitoring;
  return {
    commands,
    async sync() {
      markers += 1;
      const name = `marker:${process.pid}:${markers}`;
      const seen = new Promise<void>((resolve) => waiting.set(name, resolve));
      await control.exists(name);
      await seen;
      waiting.delete(name);
    },
    stop() {
      monitor.disconnect();
    },
  };
}

/** Commands of the lockout's script (they name its counters, `<prefix>{<tag>}:lockout:…`). */
const isLockout = (command: string[]): boolean =>
  command.some((arg) => arg.startsWith(prefix) && arg.includes('}:lockout:'));
const credentialCommands = (commands: string[][]): string[][] =>
  commands.filter((command) => !isLockout(command));
/** What reading the pair sends. */
const lookup = [
  ['get', keys.keyTag(pair.key)],
  ['hgetall', keys.key(pair.key, pair.subject)],
];

beforeAll(async () => {
  control = new Redis(redisUrl);
  upstream = await startEchoUpstream();
  await seedAtCost(pair);
  running = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    cacheTtlSec: 300,
    bcryptCost: BCRYPT_COST,
    // The timing test sends many wrong secrets from one address; the lockout is tested elsewhere.
    config: {
      lockout: { basic: { address: { threshold: 1000 }, keyAddress: { threshold: 1000 } } },
    },
  });
  // The gateway's own start-up traffic (its SUBSCRIBE) is over before anything is recorded.
  await untilSubscribers(redisUrl, prefix, 1);
});

afterAll(async () => {
  await running.close();
  await upstream.close();
  control.disconnect();
});

describe('the verified-credential cache', () => {
  it('serves a cached pair without any Redis command', async () => {
    const recording = await startRecording();
    try {
      const first = await request(pair.key, pair.secret);
      expect(first.status).toBe(200);
      expect(await first.json()).toEqual(ECHO_BODY);
      await recording.sync();
      // The measurement sees real lookups: the first request read the pair (its id carries no
      // tag: its key-tag entry first), and checked and settled its lockout counters (a script
      // each: begin, then settle).
      expect(credentialCommands(recording.commands)).toEqual(lookup);
      expect(recording.commands.filter(isLockout).map(([name]) => name)).toEqual(
        expect.arrayContaining(['evalsha']),
      );

      recording.commands.length = 0;
      for (let i = 0; i < 20; i += 1) {
        const res = await request(pair.key, pair.secret);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual(ECHO_BODY);
      }
      await recording.sync();

      expect(recording.commands).toEqual([]);
    } finally {
      recording.stop();
    }
  });

  it('does not cache a failed check: every wrong secret is looked up again', async () => {
    const recording = await startRecording();
    try {
      for (let i = 0; i < 3; i += 1) {
        expect((await request(pair.key, `wrong-secret-${i}`)).status).toBe(401);
      }
      await recording.sync();
      expect(credentialCommands(recording.commands)).toEqual([...lookup, ...lookup, ...lookup]);
    } finally {
      recording.stop();
    }
  });
});

describe('a denied Basic pair', () => {
  it('answers an unknown key exactly as a wrong secret, after a bcrypt compare of the same cost', async () => {
    // One compare at this cost, measured here beside the requests, is the yardstick.
    const reference = await bcrypt.hash('reference-secret', BCRYPT_COST);
    const compareMs: number[] = [];
    const unknownMs: number[] = [];
    const wrongMs: number[] = [];
    const bodies: { unknown: unknown[]; wrong: unknown[] } = { unknown: [], wrong: [] };
    const challenges = new Set<string | null>();
    const sample = async (key: string, secret: string, into: number[], seen: unknown[]) => {
      const started = performance.now();
      const res = await request(key, secret);
      const body = (await res.json()) as Record<string, unknown>;
      into.push(performance.now() - started);
      expect(res.status).toBe(401);
      expect(res.headers.get('x-request-id')).toBe(body.request_id);
      challenges.add(res.headers.get('www-authenticate'));
      expect(body.request_id).toMatch(GENERATED_REQUEST_ID);
      // Request ids differ by design; everything else must not.
      seen.push({ ...body, request_id: '(varies)' });
    };
    // Interleaved, so drift in machine load affects all three alike.
    for (let i = 0; i < TIMING_SAMPLES; i += 1) {
      const started = performance.now();
      await bcrypt.compare('another-secret', reference);
      compareMs.push(performance.now() - started);
      await sample(`ak_unknown${i}`, pair.secret, unknownMs, bodies.unknown);
      await sample(pair.key, `wrong-secret-${i}`, wrongMs, bodies.wrong);
    }

    const expected = errorEnvelope(
      'invalid_credentials',
      '(varies)',
      'The credentials are not valid.',
    );
    expect(bodies.unknown).toEqual(Array.from({ length: TIMING_SAMPLES }, () => expected));
    expect(bodies.wrong).toEqual(bodies.unknown);
    // The default route takes both schemes, so both challenges are offered, alike for both.
    expect([...challenges]).toEqual([
      'Basic realm="accounts-gateway", charset="UTF-8", Bearer realm="accounts-gateway"',
    ]);

    const compareMedian = median(compareMs);
    const unknownMedian = median(unknownMs);
    const wrongMedian = median(wrongMs);
    console.log(
      `bcrypt cost ${BCRYPT_COST}: one compare ${compareMedian.toFixed(1)} ms; ` +
        `401 median: unknown key ${unknownMedian.toFixed(1)} ms, wrong secret ${wrongMedian.toFixed(1)} ms`,
    );
    // Both paths paid for a real compare: an unknown key is not answered early.
    expect(unknownMedian).toBeGreaterThanOrEqual(compareMedian / 2);
    expect(wrongMedian).toBeGreaterThanOrEqual(compareMedian / 2);
  });
});

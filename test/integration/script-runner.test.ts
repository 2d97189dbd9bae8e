import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createRedisClient,
  watchRedisConnection,
  type RedisClient,
} from '../../src/backends/redis/client.js';
import {
  createScriptRunner,
  scriptFromSource,
  type ScriptRunner,
} from '../../src/backends/redis/run-script.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The Redis backend's one way to run a script: what its stores, lockout and buckets build on.
const prefix = uniquePrefix('scripts');
const INCR_BY = scriptFromSource('incr-by', `return redis.call('INCRBY', KEY.counter, ARG.by)`, {
  keys: ['counter'],
  args: ['by'],
});
/** Echoes what the prologue bound, to show each name gets its own value or list. */
const ECHO = scriptFromSource(
  'echo',
  `local out = { KEY.first, #KEY.many, ARG.one }
   for _, k in ipairs(KEY.many) do out[#out + 1] = k end
   for _, k in ipairs(KEY.more) do out[#out + 1] = k end
   for _, a in ipairs(ARG.list) do out[#out + 1] = a end
   out[#out + 1] = ARG.last
   return out`,
  { keys: ['first', 'many[]', 'more[]'], args: ['one', 'list[]', 'last'] },
);
let admin: Redis;
let client: RedisClient;
let runner: ScriptRunner;

beforeAll(() => {
  const config = redisConfig(inject('redisUrl'), prefix);
  admin = new Redis(inject('redisUrl'));
  client = createRedisClient(config);
  const connection = watchRedisConnection(client, {
    address: 'test',
    secrets: [],
    settleWithinMs: 1_000,
  });
  runner = createScriptRunner(client, { timeoutMs: config.commandTimeoutMs, connection });
});

afterAll(() => {
  client.disconnect();
  admin.disconnect();
});

describe('the Redis script runner', () => {
  it('tells onCallTime how long each call it sent took, answered or failed', async () => {
    const times: number[] = [];
    const timed = createScriptRunner(client, {
      timeoutMs: 300,
      connection: watchRedisConnection(client, {
        address: 'test',
        secrets: [],
        settleWithinMs: 1_000,
      }),
      onCallTime: (seconds) => times.push(seconds),
    });
    expect(await timed.run(INCR_BY, { counter: `${prefix}timed` }, { by: 1 })).toBe(1);
    await expect(timed.call(`${prefix}timed`, (c, k) => c.hget(k, 'f'))).rejects.toThrow();
    expect(times).toHaveLength(2);
    for (const seconds of times) expect(seconds).toBeGreaterThan(0);
  });

  it('runs a script with its keys and arguments by name', async () => {
    const counter = `${prefix}counter`;
    expect(await runner.run(INCR_BY, { counter }, { by: 2 })).toBe(2);
    expect(await runner.run(INCR_BY, { counter }, { by: '3' })).toBe(5);
  });

  it('binds every name to its own value or list, in the order declared, whatever the lists hold', async () => {
    const k = (name: string) => `${prefix}${name}`;
    expect(
      await runner.run(
        ECHO,
        { first: k('a'), many: [k('b'), k('c')], more: [k('d')] },
        { one: 'x', list: [1, 2, 3], last: 'z' },
      ),
    ).toEqual([k('a'), 2, 'x', k('b'), k('c'), k('d'), '1', '2', '3', 'z']);
    expect(
      await runner.run(
        ECHO,
        { first: k('a'), many: [], more: [] },
        { one: '', list: [], last: 'z' },
      ),
    ).toEqual([k('a'), 0, '', 'z']);
  });

  it('sends a script again after Redis forgot it (a restart or failover empties its cache)', async () => {
    const counter = `${prefix}after-flush`;
    expect(await runner.run(INCR_BY, { counter }, { by: 1 })).toBe(1);
    await admin.script('FLUSH');
    expect(await runner.run(INCR_BY, { counter }, { by: 1 })).toBe(2);
  });

  it("rejects with credential_store_unavailable on a script's own error", async () => {
    const broken = scriptFromSource('broken', `return redis.call('NOSUCHCOMMAND')`, {
      keys: [],
      args: [],
    });
    await expect(runner.run(broken, {}, {})).rejects.toMatchObject({
      code: 'credential_store_unavailable',
    });
  });

  it('refuses a name Lua could not bind', () => {
    expect(() =>
      scriptFromSource('bad', 'return 1', { keys: ['two words'], args: [] }),
    ).toThrowError('script bad: two words is not a name');
  });
});

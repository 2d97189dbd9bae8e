import { Cluster, Command, Redis, ReplyError } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRedisBreakers,
  isInfrastructureFailure,
  UNMAPPED_TARGET,
  type BreakerSettings,
  type BreakerTransition,
} from '../../../../src/backends/redis/breakers.js';
import { CircuitOpenError } from '../../../../src/concurrency/circuit-breaker.js';

// ioredis exports the class of Redis's error replies without a type of its own.
const Reply = ReplyError as new (message: string) => Error;
const errno = (code: string, message: string): Error => Object.assign(new Error(message), { code });

const SETTINGS: BreakerSettings = {
  enabled: true,
  failureThreshold: 3,
  openMs: 200,
  maxOpenMs: 1000,
};

describe('isInfrastructureFailure', () => {
  it('counts what says Redis cannot be reached or cannot serve: timeouts, sockets, a Cluster without a route, unserving replies', () => {
    for (const error of [
      new Error('no answer within 300 ms'),
      new Error('Command timed out'),
      errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'),
      errno('ECONNRESET', 'read ECONNRESET'),
      new Error('Connection is closed.'),
      new Error(
        'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
      ),
      new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
      new Reply('CLUSTERDOWN The cluster is down'),
      new Reply('LOADING Redis is loading the dataset in memory'),
      new Reply("READONLY You can't write against a read only replica."),
      new Reply('MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.'),
      new Reply(
        'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
      ),
    ])
      expect(isInfrastructureFailure(error), error.message).toBe(true);
  });

  it("never counts Redis's answers: a script's error, a wrong type, a missing script, a slot in migration, a refusal", () => {
    for (const error of [
      new Reply('ERR user_script:1: Script attempted to access nonexistent global variable'),
      new Reply('WRONGTYPE Operation against a key holding the wrong kind of value'),
      new Reply('NOSCRIPT No matching script. Please use EVAL.'),
      new Reply('TRYAGAIN Multiple keys request during rehashing of slot'),
      new Reply("OOM command not allowed when used memory > 'maxmemory'."),
      new Reply('NOPERM this user has no permissions to run the evalsha command'),
    ])
      expect(isInfrastructureFailure(error), error.message).toBe(false);
    expect(isInfrastructureFailure('not an error')).toBe(false);
  });
});

describe('createRedisBreakers', () => {
  const clients: (Redis | Cluster)[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect();
  });

  /** Breakers on `client` with a clock of the test's own; every open and close recorded. */
  function breakersOn(client: Redis | Cluster, settings = SETTINGS) {
    clients.push(client);
    let clock = 0;
    const transitions: BreakerTransition[] = [];
    const breakers = createRedisBreakers(client, {
      settings,
      address: 'redis://127.0.0.1:6379',
      probeTimeoutMs: 600,
      now: () => clock,
      onTransition: (transition) => transitions.push(transition),
    });
    const sent: string[] = [];
    const refused = new Error('connect ECONNREFUSED');
    return {
      breakers,
      transitions,
      sent,
      refused,
      advance: (ms: number) => (clock += ms),
      /** A call on `key` that Redis answers, fails as a refused connection, or fails with `outcome`. */
      call: (key: string, outcome: 'answer' | 'down' | Error) =>
        breakers.run(key, () => {
          sent.push(key);
          if (outcome === 'answer') return Promise.resolve('OK');
          return Promise.reject(outcome === 'down' ? refused : outcome);
        }),
    };
  }

  /** A Cluster client that connects nowhere, whose slot map names `master` for every slot but those given. */
  function clusterMapping(master: string, others: Record<string, string>): Cluster {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    cluster.slots = Array.from({ length: 16384 }, () => [master]);
    for (const [key, node] of Object.entries(others))
      cluster.slots[new Command('get', [key]).getSlot()] = [node];
    return cluster;
  }

  it("opens a standalone client's one breaker after 3 failures in a row, whatever keys they were on, and then refuses without calling", async () => {
    const b = breakersOn(new Redis({ lazyConnect: true }));
    for (const key of ['a', 'b', 'c']) await expect(b.call(key, 'down')).rejects.toThrow();
    const refusal: unknown = await b.call('d', 'answer').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(CircuitOpenError);
    expect(refusal).toMatchObject({ retryAfterMs: 200 });
    expect(b.sent).toEqual(['a', 'b', 'c']);
    expect(b.transitions).toEqual([
      {
        kind: 'opened',
        target: 'redis://127.0.0.1:6379',
        failures: 3,
        retryAfterMs: 200,
        lastFailure: b.refused,
      },
    ]);
  });

  it("opens a Cluster master's own breaker while the other masters answer between its failures, and keeps sending to them", async () => {
    const b = breakersOn(clusterMapping('127.0.0.1:7000', { '{b}': '127.0.0.1:7001' }));
    for (let i = 0; i < 3; i += 1) {
      await expect(b.call('{a}x', 'down')).rejects.toThrow();
      await expect(b.call('{b}x', 'answer')).resolves.toBe('OK');
    }
    await expect(b.call('{a}x', 'answer')).rejects.toBeInstanceOf(CircuitOpenError);
    await expect(b.call('{b}x', 'answer')).resolves.toBe('OK');
    expect(b.sent).toEqual(['{a}x', '{b}x', '{a}x', '{b}x', '{a}x', '{b}x', '{b}x']);
    expect(b.transitions).toMatchObject([{ kind: 'opened', target: '127.0.0.1:7000' }]);
  });

  it("sends a slot's calls to its new master's closed breaker once the slot map names it (a failover)", async () => {
    const cluster = clusterMapping('127.0.0.1:7000', {});
    const b = breakersOn(cluster);
    for (let i = 0; i < 3; i += 1) await expect(b.call('{a}x', 'down')).rejects.toThrow();
    await expect(b.call('{a}x', 'answer')).rejects.toBeInstanceOf(CircuitOpenError);
    cluster.slots[new Command('get', ['{a}x']).getSlot()] = ['127.0.0.1:7003'];
    await expect(b.call('{a}x', 'answer')).resolves.toBe('OK');
    expect(b.sent).toEqual(['{a}x', '{a}x', '{a}x', '{a}x']);
  });

  it("reports a failed-over master's open breaker closed once a refreshed slot map gives it no slot, and forgets it", async () => {
    const cluster = clusterMapping('127.0.0.1:7000', { '{b}': '127.0.0.1:7001' });
    const b = breakersOn(cluster);
    for (let i = 0; i < 3; i += 1) await expect(b.call('{a}x', 'down')).rejects.toThrow();
    b.advance(1500);
    cluster.emit('refresh');
    expect(b.transitions).toHaveLength(1);
    // A probe in flight when the map moves the slot, answered by the new master (MOVED).
    let answer: (value: string) => void = () => undefined;
    const probe = b.breakers.run(
      '{a}x',
      () => new Promise<string>((resolve) => (answer = resolve)),
    );
    cluster.slots = cluster.slots.map((nodes) =>
      nodes[0] === '127.0.0.1:7000' ? ['127.0.0.1:7003'] : nodes,
    );
    cluster.emit('refresh');
    answer('OK');
    await expect(probe).resolves.toBe('OK');
    expect(b.transitions).toMatchObject([
      { kind: 'opened', target: '127.0.0.1:7000' },
      { kind: 'closed', target: '127.0.0.1:7000', openForMs: 1500, by: 'failover' },
    ]);
    expect(b.transitions).toHaveLength(2);
    // Master again later (a failback): a breaker of its own, closed.
    cluster.slots[new Command('get', ['{a}x']).getSlot()] = ['127.0.0.1:7000'];
    await expect(b.call('{a}x', 'answer')).resolves.toBe('OK');
  });

  it('gives the slots no master is known for one breaker of their own', async () => {
    const cluster = clusterMapping('127.0.0.1:7000', {});
    cluster.slots = [];
    const b = breakersOn(cluster);
    for (const key of ['{a}', '{b}', '{c}']) await expect(b.call(key, 'down')).rejects.toThrow();
    await expect(b.call('{d}', 'answer')).rejects.toBeInstanceOf(CircuitOpenError);
    expect(b.transitions).toMatchObject([{ kind: 'opened', target: UNMAPPED_TARGET }]);
  });

  it('lets one call probe after openMs, closes when it succeeds, and says how long it was open', async () => {
    const b = breakersOn(new Redis({ lazyConnect: true }));
    for (let i = 0; i < 3; i += 1) await expect(b.call('k', 'down')).rejects.toThrow();
    b.advance(199);
    await expect(b.call('k', 'answer')).rejects.toMatchObject({ retryAfterMs: 1 });
    b.advance(1);
    await expect(b.call('k', 'answer')).resolves.toBe('OK');
    await expect(b.call('k', 'answer')).resolves.toBe('OK');
    expect(b.transitions.map(({ kind }) => kind)).toEqual(['opened', 'closed']);
    expect(b.transitions[1]).toEqual({
      kind: 'closed',
      target: 'redis://127.0.0.1:6379',
      openForMs: 200,
      by: 'probe',
    });
  });

  it("does not count Redis's error replies", async () => {
    const b = breakersOn(new Redis({ lazyConnect: true }));
    const wrongType = new Reply(
      'WRONGTYPE Operation against a key holding the wrong kind of value',
    );
    for (let i = 0; i < 5; i += 1) await expect(b.call('k', wrongType)).rejects.toBe(wrongType);
    await expect(b.call('k', 'answer')).resolves.toBe('OK');
    expect(b.sent).toHaveLength(6);
    expect(b.transitions).toEqual([]);
  });

  it('calls straight through when disabled', async () => {
    const b = breakersOn(new Redis({ lazyConnect: true }), { ...SETTINGS, enabled: false });
    for (let i = 0; i < 5; i += 1) await expect(b.call('k', 'down')).rejects.toThrow();
    await expect(b.call('k', 'answer')).resolves.toBe('OK');
    expect(b.sent).toHaveLength(6);
    expect(b.transitions).toEqual([]);
  });
});

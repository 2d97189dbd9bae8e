import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisBreakers, type BreakerTransition } from '../../src/backends/redis/breakers.js';
import {
  createRedisClient,
  watchRedisConnection,
  type RedisClient,
} from '../../src/backends/redis/client.js';
import { createScriptRunner, type ScriptRunner } from '../../src/backends/redis/run-script.js';
import { CircuitOpenError } from '../../src/concurrency/circuit-breaker.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import type { RedisProcess } from '../support/redis-process.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { untilState } from '../support/until-state.js';

// One breaker per Cluster master, on a real Cluster of 3 masters and 3 replicas: a dead
// master's slots are answered at once while the other masters keep being asked, and the
// breaker closes once its slots answer again after the promotion. Keys of different hash
// tags land on different masters; the runner is the backend's, on the backend's client.

// A key's slot is its first {…}: each key here starts with a tag of its own, then the file's
// unique prefix (whose own tag then no longer decides the slot).
const prefix = uniquePrefix('breakercluster');
let cluster: RedisCluster;
let client: RedisClient;
let runner: ScriptRunner;
const transitions: BreakerTransition[] = [];
let clock = 0;

beforeAll(async () => {
  cluster = await startRedisCluster();
  const config = {
    ...redisConfig('redis://127.0.0.1:6379', prefix),
    mode: 'cluster' as const,
    nodes: [...cluster.seeds],
  };
  client = createRedisClient(config);
  const connection = watchRedisConnection(client, {
    address: 'cluster',
    secrets: [],
    settleWithinMs: 3_000,
  });
  const breakers = createRedisBreakers(client, {
    settings: config.breaker,
    address: 'cluster',
    probeTimeoutMs: config.commandTimeoutMs * 2,
    now: () => clock,
    onTransition: (transition) => transitions.push(transition),
  });
  runner = createScriptRunner(client, {
    timeoutMs: config.commandTimeoutMs,
    connection,
    breakers,
  });
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

const set = (key: string): Promise<unknown> => runner.call(key, (c, k) => c.set(k, 'here'));

/** A key (of its own hash tag) whose slot `master` serves, or does not serve. */
async function keyOn(master: RedisProcess, served: boolean): Promise<string> {
  for (let tag = 0; tag < 1000; tag += 1) {
    const key = `{probe${tag}}${prefix}`;
    if (((await cluster.masterOf(key)) === master) === served) return key;
  }
  throw new Error(`no key found ${served ? 'on' : 'off'} ${master.address}`);
}

describe('the breakers of a Redis Cluster', () => {
  it('open for a killed master alone while the others answer between its failures, and close once its slots answer after the promotion', async () => {
    const victimKey = `{victim}${prefix}`;
    const victim = await cluster.masterOf(victimKey);
    const otherKey = await keyOn(victim, false);
    await untilState(
      'the Cluster client to write on both masters',
      async () => {
        await set(victimKey);
        return set(otherKey);
      },
      (reply) => (reply === 'OK' ? true : undefined),
    );

    await cluster.killMaster(victim);
    for (let i = 0; i < 3; i += 1) {
      await expect(set(victimKey)).rejects.toMatchObject({ code: 'credential_store_unavailable' });
      await expect(set(otherKey)).resolves.toBe('OK');
    }
    const refusal: unknown = await set(victimKey).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'credential_store_unavailable', retryAfterSec: 1 });
    expect((refusal as Error).cause).toBeInstanceOf(CircuitOpenError);
    await expect(set(otherKey)).resolves.toBe('OK');
    expect(transitions).toMatchObject([{ kind: 'opened', target: victim.address, failures: 3 }]);

    const promoted = await cluster.awaitPromotion(victimKey, victim);
    // Each step lets one call go on the slot: a probe of the old master's breaker while the
    // client's map still names it (it may fail, then the next waits longer), or a call to the
    // promoted master once the map names it (the old breaker is then dropped as closed).
    let probes = 0;
    await untilState(
      `a probe of ${victim.address}'s breaker to reach ${promoted.address}`,
      async () => {
        probes += 1;
        clock += 1_000;
        return set(victimKey);
      },
      (reply) => (reply === 'OK' ? true : undefined),
      { intervalMs: 0, guardMs: 30_000 },
    );
    const closed = transitions.find((transition) => transition.kind === 'closed');
    console.log(
      `Cluster breaker of the killed master closed by ${String(closed?.by)}; ${probes} probe(s) after the promotion`,
    );
    expect(transitions).toMatchObject([
      { kind: 'opened', target: victim.address },
      { kind: 'closed', target: victim.address },
    ]);
    await expect(set(victimKey)).resolves.toBe('OK');
    await expect(set(otherKey)).resolves.toBe('OK');
  }, 60_000);
});

import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/errors/error-codes.js';
import { failoverUnderLoad, startLoad, type FailoverRun } from './failover-under-load.js';
import type { GatewayProcess } from './gateway-process.js';
import { sample } from './scrape-metric.js';
import { send } from './send.js';
import { WHOLE, type KeyPair, type TopologyGateways } from './topology-gateways.js';

/** What the shared tests need of a topology file: its gateways, and a failover of its own. */
export interface TopologyUnderTest {
  readonly mode: 'cluster' | 'sentinel';
  /** Names the failover and its settings in the printed phases. */
  readonly failoverLabel: string;
  gateways(): TopologyGateways;
  /** The data servers running now: where the gateways' subscriptions are counted. */
  runningServers(): string[];
  /** Kills the master holding `subject`'s keys (once its replica caught up). */
  killMaster(subject: string): Promise<void>;
  /** Resolves once the topology has promoted the killed master's replica. */
  awaitPromotion(): Promise<void>;
  /** After killMaster: the `target` of the breaker its calls went through (log field, metric label). */
  breakerTarget(): string;
}

/** Cold pairs: a subject's first and 9 more (the gateways' default keys.maxActivePerSubject is 10). */
const COLD_PAIRS = 10;

/** Clients that send cached pairs (every request still runs the rate-limit script). */
const CACHED_CLIENTS = 3;
const CACHED_INTERVAL_MS = 10;
const COLD_INTERVAL_MS = 50;

/** Runs SCRIPT FLUSH on each of `addresses` (host:port). */
async function flushScripts(addresses: readonly string[]): Promise<void> {
  await Promise.all(
    addresses.map(async (address) => {
      const [host, port] = address.split(':');
      const redis = new Redis({ host, port: Number(port), lazyConnect: true });
      try {
        await redis.connect();
        await redis.call('SCRIPT', 'FLUSH');
      } finally {
        redis.disconnect();
      }
    }),
  );
}

/** A 503 the gateway answered by policy: its envelope, and when to come back. */
function expectStoreUnavailable(
  answers: readonly { status: number; headers: Record<string, unknown>; json: unknown }[],
): void {
  for (const answer of answers) {
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(answer.json).toMatchObject({
      error: {
        code: 'credential_store_unavailable',
        message: ERROR_CATALOGUE.credential_store_unavailable.message,
      },
    });
  }
}

/** The breaker lines a gateway has logged so far. */
const breakerLines = (gateway: GatewayProcess) =>
  gateway.logs.filter((entry) => String(entry.msg).startsWith('redis breaker'));

/**
 * The tests every topology passes with two gateways on it: ready, a pair made with the CLI
 * authenticates, a revocation reaches the other gateway, and a master killed under a trickle
 * of requests costs 503s only until the promotion, with no restart. The failover tests run
 * last and leave the killed master down, for the file's own restart test.
 */
export function describeGatewaysOnTopology(topology: TopologyUnderTest): void {
  const gateways = (): TopologyGateways => topology.gateways();

  /** A pair accepted on B, revoked through A's API, answered 401 by B. */
  const revokedThroughAOnB = async (): Promise<void> => {
    const pair = await gateways().createPair('subject-revoked');
    expect(await gateways().accounts(gateways().b, pair)).toBe(200);
    await gateways().revokeThroughA(pair, topology.runningServers());
    expect(await gateways().accounts(gateways().b, pair)).toBe(401);
  };

  describe(`gateways in ${topology.mode} mode`, () => {
    it('are ready at /readyz', async () => {
      for (const gateway of [gateways().a, gateways().b])
        expect(await send(gateway.adminUrl ?? '', '/readyz')).toMatchObject({
          status: 200,
          body: '{"status":"ready"}',
        });
    });

    it('authenticate a pair made with keys create on both gateways', async () => {
      const { a, b } = gateways();
      const pair = await gateways().createPair('subject-created');
      expect(await gateways().accounts(a, pair)).toBe(200);
      expect(await gateways().accounts(b, pair)).toBe(200);
      expect(await gateways().accounts(b, { ...pair, secret: `${pair.secret}x` })).toBe(401);
    });

    it("stop accepting a pair on gateway B once gateway A's API revokes it", revokedThroughAOnB);
  });

  /** `count` pairs of `subject`: its first made with keys create, the others through A's API. */
  const subjectPairs = async (subject: string, count: number): Promise<KeyPair[]> => {
    const first = await gateways().createPair(subject);
    return [first, ...(await gateways().makePairs(gateways().a, first, count - 1))];
  };

  /** Keep-alive clients of gateway A with a cached pair each, and one of B with cold pairs. */
  const clientsFor = async (name: string) => {
    const cachedPairs = await subjectPairs(`subject-${name}-cached`, CACHED_CLIENTS);
    const coldPairs = await subjectPairs(`subject-${name}-cold`, COLD_PAIRS);
    const { a, b } = gateways();
    const cached = cachedPairs.map((pair) => gateways().client(a, [pair], CACHED_INTERVAL_MS));
    const cold = gateways().client(b, coldPairs, COLD_INTERVAL_MS);
    return {
      cached,
      cold,
      all: [...cached, cold],
      cachedPairs,
      cachedSubject: `subject-${name}-cached`,
    };
  };

  describe('the gateways under load (keep-alive clients with cached pairs on A, cold pairs on B)', () => {
    it('lose the script cache of every node (SCRIPT FLUSH) without a failed request', async () => {
      const { all } = await clientsFor('flush');
      const load = startLoad(all);
      try {
        await load.everyClient((answer) => answer.status === 200);
        for (let flush = 0; flush < 3; flush += 1) {
          await flushScripts(topology.runningServers());
          const flushedMs = performance.now();
          await load.everyClient((answer) => answer.sentMs > flushedMs && answer.status === 200);
        }
      } finally {
        const answers = await load.stop();
        for (const client of all) client.close();
        expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
      }
      expect([...breakerLines(gateways().a), ...breakerLines(gateways().b)]).toEqual([]);
    }, 60_000);
  });

  describe("the master of the gateways' keys killed under load", () => {
    it('never answers a valid pair 401: 200, or 503 with Retry-After while the breaker is open; it closes after the promotion, and every path works again without a restart', async () => {
      const { cached, cold, all, cachedPairs, cachedSubject } = await clientsFor('failover');
      const unused = await gateways().createPair('subject-failover-unused');
      let run: FailoverRun;
      try {
        run = await failoverUnderLoad({
          label: topology.failoverLabel,
          // Pairs B has never seen, asked only once the master is dead: each reaches the store.
          clients: [...cached, { ...cold, afterKill: true }],
          // The cached pairs' master: on a Cluster each subject's keys are on one master.
          killMaster: () => topology.killMaster(cachedSubject),
          awaitPromotion: () => topology.awaitPromotion(),
        });
      } finally {
        for (const client of all) client.close();
      }
      console.log(run.report);
      // Never a 401 for a valid pair: the store failing is 503, never "wrong secret".
      expect(run.samples.filter((answer) => ![200, 503].includes(answer.status))).toEqual([]);
      for (const client of all) expectStoreUnavailable(client.refused);

      const { a } = gateways();
      const target = topology.breakerTarget();
      await a.waitForLog('redis breaker closed', { target });
      expect(breakerLines(a).filter((line) => line.target === target)).toMatchObject([
        { level: 40, msg: 'redis breaker opened', failures: 3 },
        { level: 30, msg: 'redis breaker closed' },
      ]);
      const metrics = (await send(a.adminUrl ?? '', '/metrics')).body;
      const series = (name: string, labels: string) => sample(metrics, `${name}{${labels}}`);
      expect({
        open: series('gateway_redis_breaker_open', `target="${target}"`),
        opened: series(
          'gateway_redis_breaker_transitions_total',
          `target="${target}",state="open"`,
        ),
        closed: series(
          'gateway_redis_breaker_transitions_total',
          `target="${target}",state="closed"`,
        ),
      }).toEqual({ open: 0, opened: 1, closed: 1 });
      const [known] = cachedPairs;
      if (known === undefined) throw new Error('no cached pair');
      expect(await gateways().everyPath(known, unused)).toEqual(WHOLE);
    }, 90_000);

    it(
      'leaves the revocation channel working: gateway B drops a pair gateway A revokes',
      revokedThroughAOnB,
    );
  });
}

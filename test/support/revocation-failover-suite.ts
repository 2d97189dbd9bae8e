import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader } from './basic-header.js';
import type { GatewayProcess } from './gateway-process.js';
import { requestLine, untilLogs, type LogLine } from './gateway-logs.js';
import type { RedisProcess } from './redis-process.js';
import { killCliChildren } from './run-cli.js';
import { scrapeMetric } from './scrape-metric.js';
import { send } from './send.js';
import {
  startTopologyGateways,
  type KeyPair,
  type TopologyGateways,
  type TopologyRedis,
} from './topology-gateways.js';

/** What the revocation suite needs of a topology file. */
export interface RevocationFailover {
  readonly mode: 'cluster' | 'sentinel';
  readonly redis: () => TopologyRedis;
  /**
   * The master to fail over, given the node each worker's subscription stands on (gateway A's
   * first worker first): on a Cluster the master under that first subscription, on Sentinel
   * the master.
   */
  masterToFail(subscriptions: readonly string[]): Promise<RedisProcess>;
  /** Kills `master` once its replica has caught up; resolves once that replica is promoted. */
  failOver(master: RedisProcess): Promise<void>;
  /** Starts the killed master again, as a replica: the topology whole for what follows. */
  restart(master: RedisProcess): Promise<void>;
}

const WORKERS = 2;
const SLOTS = Array.from({ length: WORKERS }, (_, i) => i + 1);
const LAG_COUNT = 'gateway_revocation_lag_seconds_count';
const LAG_SUM = 'gateway_revocation_lag_seconds_sum';
const RESUBSCRIBES = 'gateway_revocation_resubscribes_total';
/** A guard on waits that span a failover (promotion in about 4 s here), never a bound. */
const FAILOVER_GUARD_MS = 60_000;

/** One worker of one gateway, and the node its revocation subscription stands on. */
interface Worker {
  readonly name: string;
  readonly gateway: GatewayProcess;
  readonly slot: number;
  node: string;
}

/**
 * Revocation through a failover (issue 14, point 3), on two gateways of `serve --workers 2`:
 * a pair revoked through gateway A is refused by every worker of both gateways, before and
 * after the failover of the master that matters, each worker whose subscription it served
 * subscribes again exactly once (and flushes), the others keep theirs, and the lag histogram
 * counts each application. Which worker answered is read from its access line (X-Request-Id).
 * The pairs stay cached for 300 s: within the tests' timeouts only a message or a flush can
 * end an entry, and no flush happens between warming a pair and its 401s (the resubscribe
 * counter says so), so each 401 is the message's doing.
 */
export function describeRevocationThroughFailover(topology: RevocationFailover): void {
  let gateways: TopologyGateways;
  let workers: Worker[] = [];
  let failed: RedisProcess | undefined;

  const started = async (): Promise<void> => {
    gateways = await startTopologyGateways(`revoke-${topology.mode}`, topology.redis(), {
      workers: WORKERS,
    });
    const { a, b } = gateways;
    workers = await Promise.all(
      [a, b].flatMap((gateway, index) =>
        SLOTS.map(async (slot) => {
          const [line] = await subscribed(gateway, slot, 'revocations subscribed', 1);
          return { name: `${'AB'[index]}${slot}`, gateway, slot, node: String(line?.node) };
        }),
      ),
    );
  };

  /** The worker's lines with `msg`, once there are `count`. */
  const subscribed = (
    gateway: GatewayProcess,
    slot: number,
    msg: string,
    count: number,
  ): Promise<LogLine[]> =>
    untilLogs(
      gateway,
      `${count} "${msg}" lines of worker ${slot}`,
      (line) => line.msg === msg && line.worker === slot,
      count,
      FAILOVER_GUARD_MS,
    );

  const resubscribesOf = (worker: Worker): number =>
    worker.gateway.logs.filter(
      (line) => line.msg === 'revocations subscribed again' && line.worker === worker.slot,
    ).length;

  /**
   * GETs /accounts with `pair` on fresh connections (the primary hands each to the next
   * worker) until every worker of `gateway` has answered `want`; `passing` are the statuses
   * allowed on the way (a cached pair's 200 before the message lands, a 503 right after a
   * promotion).
   */
  const untilEveryWorker = async (
    gateway: GatewayProcess,
    pair: KeyPair,
    want: number,
    passing: readonly number[],
  ): Promise<void> => {
    const answered = new Set<unknown>();
    while (answered.size < WORKERS) {
      const id = `revoke-${randomUUID()}`;
      const answer = await send(gateway.url, '/accounts', {
        headers: { authorization: basicHeader(pair.key, pair.secret), 'x-request-id': id },
      });
      if (answer.status !== want && !passing.includes(answer.status))
        throw new Error(`wanted ${want}, got ${answer.status}: ${answer.body}`);
      const line = await requestLine(gateway, id);
      if (answer.status === want) answered.add(line.worker);
    }
  };

  const bothGateways = (): GatewayProcess[] => [gateways.a, gateways.b];

  /**
   * A pair made with the CLI and cached by every worker, revoked through gateway A, then
   * refused (401) by every worker of both gateways; the lag histogram of each gateway counts
   * one application per worker, and no worker resubscribed meanwhile. Prints the mean lag.
   */
  const revokedOnEveryWorker = async (label: string, passing: readonly number[]) => {
    const pair = await gateways.createPair(`subject-${label}`);
    for (const gateway of bothGateways()) await untilEveryWorker(gateway, pair, 200, passing);
    const lagBefore = await Promise.all(bothGateways().map((g) => scrapeMetric(g, LAG_COUNT)));
    const sumBefore = await Promise.all(bothGateways().map((g) => scrapeMetric(g, LAG_SUM)));
    const resubscribed = workers.map(resubscribesOf);

    await gateways.deleteOnA(pair);
    for (const gateway of bothGateways()) await untilEveryWorker(gateway, pair, 401, [200]);

    const lagAfter = await Promise.all(bothGateways().map((g) => scrapeMetric(g, LAG_COUNT)));
    const sumAfter = await Promise.all(bothGateways().map((g) => scrapeMetric(g, LAG_SUM)));
    expect(lagAfter.map((count, i) => count - (lagBefore[i] ?? 0))).toEqual([WORKERS, WORKERS]);
    expect(workers.map(resubscribesOf)).toEqual(resubscribed);
    const lagSec = sumAfter.reduce((sum, s, i) => sum + s - (sumBefore[i] ?? 0), 0);
    const meanMs = (lagSec / workers.length) * 1000;
    console.log(
      `${topology.mode}, ${label}: a revocation through A applied by all ${workers.length} workers, ` +
        `mean lag ${meanMs.toFixed(1)} ms (publish in Redis to eviction)`,
    );
  };

  describe(`a revocation on two gateways of ${WORKERS} workers in ${topology.mode} mode`, () => {
    beforeAll(started, 120_000);

    afterAll(async () => {
      killCliChildren();
      await gateways?.close();
    });

    it('reaches every worker of both gateways before any failover', async () => {
      expect(workers.map(resubscribesOf)).toEqual(workers.map(() => 0));
      await revokedOnEveryWorker('before', []);
    }, 60_000);

    it('survives the failover of the master under a subscription: each worker it served subscribes again once, the others keep theirs', async () => {
      const master = await topology.masterToFail(workers.map((worker) => worker.node));
      const served = workers.filter((worker) => worker.node === master.address);
      expect(served.length).toBeGreaterThan(0);
      await topology.failOver(master);
      failed = master;
      for (const worker of served) {
        const [again] = await subscribed(
          worker.gateway,
          worker.slot,
          'revocations subscribed again',
          1,
        );
        expect(again?.node).not.toBe(master.address);
        worker.node = String(again?.node);
      }
      expect(Object.fromEntries(workers.map((w) => [w.name, resubscribesOf(w)]))).toEqual(
        Object.fromEntries(workers.map((w) => [w.name, served.includes(w) ? 1 : 0])),
      );
      const counted = await Promise.all(bothGateways().map((g) => scrapeMetric(g, RESUBSCRIBES)));
      expect(counted).toEqual(
        bothGateways().map((g) => served.filter((worker) => worker.gateway === g).length),
      );
      console.log(
        `${topology.mode}: failed over ${master.address}, which served ` +
          `${served.map((worker) => worker.name).join(', ')}; each subscribed again once`,
      );
    }, 120_000);

    it('reaches every worker of both gateways after the failover, by the message', async () => {
      if (failed === undefined) throw new Error('the failover test failed over no master');
      const resubscribed = workers.map(resubscribesOf);
      await revokedOnEveryWorker('after', [503]);
      // Nothing more resubscribed since the failover: one flush per loss, not one per retry.
      expect(workers.map(resubscribesOf)).toEqual(resubscribed);
      await topology.restart(failed);
    }, 120_000);
  });
}

import { describe, expect, it } from 'vitest';
import { failoverUnderTrickle } from './failover-under-trickle.js';
import { send } from './send.js';
import { WHOLE, type TopologyGateways } from './topology-gateways.js';

/** What the shared tests need of a topology file: its gateways, and a failover of its own. */
export interface TopologyUnderTest {
  readonly mode: 'cluster' | 'sentinel';
  /** Names the failover and its settings in the printed phases. */
  readonly failoverLabel: string;
  gateways(): TopologyGateways;
  /** The data servers running now: where the gateways' subscriptions are counted. */
  runningServers(): string[];
  /** Kills the master holding the gateways' keys (once its replica caught up). */
  killMaster(): Promise<void>;
  /** Resolves once the topology has promoted the killed master's replica. */
  awaitPromotion(): Promise<void>;
}

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

  describe("the master of the gateways' keys killed under a trickle of requests", () => {
    it('is replaced by its replica, and the gateways serve every valid pair again without a restart', async () => {
      const cached = await gateways().createPair('subject-trickle');
      const unused = await gateways().createPair('subject-unused');
      const run = await failoverUnderTrickle({
        label: topology.failoverLabel,
        request: () => gateways().accounts(gateways().a, cached),
        killMaster: () => topology.killMaster(),
        awaitPromotion: () => topology.awaitPromotion(),
      });
      console.log(run.report);
      // Never a 401 for a valid pair: the store failing is 503, never "wrong secret".
      expect(run.samples.filter((sample) => ![200, 503].includes(sample.status))).toEqual([]);
      expect(await gateways().everyPath(cached, unused)).toEqual(WHOLE);
    }, 90_000);

    it(
      'leaves the revocation channel working: gateway B drops a pair gateway A revokes',
      revokedThroughAOnB,
    );
  });
}

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { failoverUnderTrickle } from '../support/failover-under-trickle.js';
import {
  SENTINEL_DOWN_AFTER_MS,
  startRedisSentinels,
  type RedisSentinels,
} from '../support/redis-sentinels.js';
import { killCliChildren } from '../support/run-cli.js';
import { send } from '../support/send.js';
import {
  startTopologyGateways,
  WHOLE,
  type TopologyGateways,
} from '../support/topology-gateways.js';

// Issue 14, point 5's ground: the gateway as it is today behind Redis Sentinel (1 master,
// 1 replica, 3 sentinels with quorum 2: processes of this file's own), with two gateway
// processes in sentinel mode. The phases of a failover are printed, never bounded (README
// design decisions).

let set: RedisSentinels;
let gateways: TopologyGateways;

beforeAll(async () => {
  set = await startRedisSentinels();
  gateways = await startTopologyGateways('sentinel', {
    mode: 'sentinel',
    nodes: set.sentinelAddresses,
    sentinelName: set.name,
  });
}, 120_000);

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateways?.close();
  await set?.stop();
});

/** The data servers running now: where the gateways' subscriptions are counted. */
const runningServers = (): string[] =>
  set.servers.filter((server) => server.pid !== undefined).map((server) => server.address);

/** A pair accepted on B, revoked through A's API, answered 401 by B. */
async function revokedThroughAOnB(): Promise<void> {
  const pair = await gateways.createPair('subject-revoked');
  expect(await gateways.accounts(gateways.b, pair)).toBe(200);
  await gateways.revokeThroughA(pair, runningServers());
  expect(await gateways.accounts(gateways.b, pair)).toBe(401);
}

describe('a Sentinel set of 1 master, 1 replica and 3 sentinels on loopback', () => {
  it('names the first server as master, which takes writes its replica then holds', async () => {
    const [first, replica] = set.servers;
    expect(await set.master()).toBe(first);
    const key = `${gateways.keyPrefix}probe`;
    expect(await first?.call('SET', key, 'here')).toBe('OK');
    await expect(replica?.call('SET', key, 'there')).rejects.toThrow(/^READONLY/);
    for (const sentinel of set.sentinels)
      expect(await sentinel.call('SENTINEL', 'get-master-addr-by-name', set.name)).toEqual([
        '127.0.0.1',
        String(first?.port),
      ]);
  });
});

describe('gateways in sentinel mode', () => {
  it('are ready at /readyz', async () => {
    for (const gateway of [gateways.a, gateways.b])
      expect(await send(gateway.adminUrl ?? '', '/readyz')).toMatchObject({
        status: 200,
        body: '{"status":"ready"}',
      });
  });

  it('authenticate a pair made with keys create on both gateways', async () => {
    const pair = await gateways.createPair('subject-created');
    expect(await gateways.accounts(gateways.a, pair)).toBe(200);
    expect(await gateways.accounts(gateways.b, pair)).toBe(200);
    expect(await gateways.accounts(gateways.b, { ...pair, secret: `${pair.secret}x` })).toBe(401);
  });

  it("stop accepting a pair on gateway B once gateway A's API revokes it", async () => {
    await revokedThroughAOnB();
  });
});

describe('the master killed under a trickle of requests', () => {
  it('is replaced by its replica, and the gateways serve every valid pair again without a restart', async () => {
    const cached = await gateways.createPair('subject-trickle');
    const unused = await gateways.createPair('subject-unused');
    let killed = set.servers[0];

    const run = await failoverUnderTrickle({
      label: `Sentinel failover (down-after-milliseconds ${SENTINEL_DOWN_AFTER_MS})`,
      request: () => gateways.accounts(gateways.a, cached),
      killMaster: async () => {
        killed = await set.killMaster();
      },
      awaitPromotion: async () => {
        if (killed !== undefined) await set.awaitPromotion(killed);
      },
    });
    console.log(run.report);

    // Never a 401 for a valid pair: the store failing is 503, never "wrong secret".
    expect(run.samples.filter((sample) => ![200, 503].includes(sample.status))).toEqual([]);
    expect(await set.master()).toBe(set.servers[1]);
    expect(await gateways.everyPath(cached, unused)).toEqual(WHOLE);
  }, 90_000);

  it('leaves the revocation channel working: gateway B drops a pair gateway A revokes', async () => {
    await revokedThroughAOnB();
  });

  it('takes the killed master back, restarted, as a replica of the promoted one', async () => {
    const [killed, promoted] = set.servers;
    if (killed === undefined || promoted === undefined) throw new Error('two servers expected');
    expect(killed.pid).toBeUndefined();
    await set.restart(killed);
    expect(await set.master()).toBe(promoted);
    expect(await killed.call('ROLE')).toEqual([
      'slave',
      '127.0.0.1',
      promoted.port,
      'connected',
      expect.any(Number),
    ]);
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { startRedisSentinels, type RedisSentinels } from '../support/redis-sentinels.js';
import { sample } from '../support/scrape-metric.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';
import { startTrickle, type TrickleSample } from '../support/trickle.js';

// A lease-mode rate limit through a Redis failover (issue 28): behind Sentinel, a master
// killed under a load over the limit. The gateway keeps deciding in process meanwhile (no
// 503 for a limit, failing closed or not), and asks the promoted master again once it is
// there. The exact-mode limit's failover (503 while the master is gone, failing closed) is
// redis-sentinel.test.ts's.

const prefix = uniquePrefix('lease-failover');
const layout = redisLayout(prefix);
const pair = { key: 'ak_lease_failover', secret: 'lease-failover-0123456789', subject: 'lease' };
/** 20 a second; the load sends about 50. */
const POLICY = { requests: 20, periodSec: 1, burst: 20 };

let set: RedisSentinels;
let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  set = await startRedisSentinels();
  upstream = await startEchoUpstream();
  const master = await set.master();
  await seedKey(`redis://${master.address}`, prefix, pair);
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      config: {
        credentials: {
          store: 'redis',
          redis: {
            mode: 'sentinel',
            nodes: [...set.sentinelAddresses],
            sentinelName: set.name,
            keyPrefix: prefix,
          },
        },
        auth: { basic: { cache: { ttlSec: 3600 } } },
        rateLimits: { credential: POLICY, onStoreError: 'closed' },
        logging: { level: 'info', requests: false },
      },
    }),
  );
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
  await set?.stop();
});

const accounts = async (): Promise<number> =>
  (
    await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    })
  ).status;

const statusesOf = (samples: readonly TrickleSample[]): Record<number, number> => {
  const counts: Record<number, number> = {};
  for (const s of samples) counts[s.status] = (counts[s.status] ?? 0) + 1;
  return counts;
};

describe('a lease-mode limit through a Sentinel failover under a load over the limit', () => {
  it('keeps refusing past the policy and never answers 503, then asks the promoted master again', async () => {
    expect(await accounts()).toBe(200);
    const load = startTrickle(accounts, 20);
    // Over the limit before the kill: Redis's refusals, held in process.
    await load.next((s) => s.status === 429);
    const killedAt = performance.now();
    const killed = await set.killMaster();
    const promoted = await set.awaitPromotion(killed);
    const promotedAt = performance.now();
    // The bucket as the promoted master holds it goes: the next lease writes it again there.
    const bucket = layout.bucket({
      kind: 'credential',
      owner: { kind: 'key', key: pair.key, subject: pair.subject },
    });
    await promoted.call('DEL', bucket);
    // Answer by answer until a lease script has written it there (the test's timeout bounds it).
    while (Number(await promoted.call('EXISTS', bucket)) === 0) {
      const now = performance.now();
      await load.next((s) => s.sentMs > now);
    }
    const samples = await load.stop();
    const outage = samples.filter((s) => s.sentMs >= killedAt && s.sentMs < promotedAt);
    // Limits kept deciding while the master was gone: some admitted, the rest refused.
    expect(statusesOf(samples)[503]).toBeUndefined();
    expect(Object.keys(statusesOf(outage)).sort()).toEqual(['200', '429']);
    // Admitted while the master was gone: at most the policy over that time, plus what the
    // gateway held and the fallback's full bucket (a burst each).
    const outageSec = (promotedAt - killedAt) / 1000;
    const admitted = outage.filter((s) => s.status === 200).length;
    expect(admitted).toBeLessThanOrEqual(POLICY.requests * outageSec + 2 * POLICY.burst);
    const metrics = (await send(gateway.adminUrl ?? '', '/metrics')).body;
    expect(sample(metrics, 'gateway_rate_limit_store_errors_total')).toBeGreaterThan(0);
  }, 90_000);
});

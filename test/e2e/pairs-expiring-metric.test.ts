import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';
import { basicHeader } from '../support/basic-header.js';
import { HASH } from '../support/credential-store-contract.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// gateway_pairs_expiring (issue 29, point 4) on the built gateway: counted in the background
// every keys.expiringCountIntervalSec, shown once across the workers of a set (one count of
// one store, not a sum), shared through Redis, and counted on the memory store too.

const DAY_MS = 86_400_000;
const INTERVAL_SEC = 1;
const COUNTED = { keys: { expiringCountIntervalSec: INTERVAL_SEC } } as const;

let gateway: GatewayProcess | undefined;
const stores: CredentialStore[] = [];
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

/** The gauge's series as /metrics shows them, by window; {} while it has none. */
async function expiring(g: GatewayProcess): Promise<Record<string, number>> {
  const res = await fetch(`${g.adminUrl ?? ''}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return Object.fromEntries(
    [...text.matchAll(/^gateway_pairs_expiring\{within="(\w+)"\} (\d+)$/gm)].map(
      ([, within = '', value]): [string, number] => [within, Number(value)],
    ),
  );
}

/**
 * Scrapes until the gauge reads `wanted` (a new count comes every interval), or fails with
 * what it read last once `deadlineMs` has passed: many intervals, on two shared cores.
 */
async function untilExpiring(
  g: GatewayProcess,
  wanted: Record<string, number>,
  deadlineMs = 30_000,
): Promise<void> {
  const started = performance.now();
  let last: Record<string, number> = {};
  while (performance.now() - started < deadlineMs) {
    last = await expiring(g);
    if (JSON.stringify(last) === JSON.stringify(wanted)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(last).toEqual(wanted);
}

function pair(key: string, subject: string, endsInDays: number | undefined): KeyRecord {
  const nowMs = Date.now();
  return {
    key,
    subject,
    secretHash: HASH,
    label: '',
    status: 'active',
    createdAt: new Date(nowMs).toISOString(),
    scopes: [],
    ...(endsInDays === undefined
      ? {}
      : { expiresAt: new Date(nowMs + endsInDays * DAY_MS).toISOString() }),
  };
}

describe('gateway_pairs_expiring', () => {
  it('counts the usable pairs ending within 7 and 30 days on Redis, once across --workers 2, and follows new ones', async () => {
    const redisUrl = inject('redisUrl');
    const keyPrefix = uniquePrefix('expmetric');
    const store = openRedisStore(redisConfig(redisUrl, keyPrefix));
    stores.push(store);
    for (const [key, subject, days] of [
      ['ak_m_week', 'm-a', 2],
      ['ak_m_month', 'm-b', 10],
      ['ak_m_later', 'm-a', 40],
      ['ak_m_never', 'm-c', undefined],
      ['ak_m_revoked', 'm-c', 3],
    ] as const)
      expect(await store.createKey(pair(key, subject, days), 10)).toBe(true);
    await store.revokeKey('ak_m_revoked', new Date().toISOString());

    gateway = await startGateway(
      gatewayYaml({ upstreamUrl: 'builtin', redis: { url: redisUrl, keyPrefix }, config: COUNTED }),
      ['--workers', '2'],
    );
    await untilExpiring(gateway, { '7d': 1, '30d': 2 });

    await store.createKey(pair('ak_m_soon', 'm-d', 5), 10);
    await untilExpiring(gateway, { '7d': 2, '30d': 3 });
    // The count every gateway on this Redis reads.
    const redis = new Redis(redisUrl);
    try {
      const shared = JSON.parse(
        (await redis.get(redisLayout(keyPrefix).expiringCount)) ?? '{}',
      ) as Record<string, number>;
      expect(shared).toMatchObject({ within_7d: 2, within_30d: 3 });
    } finally {
      redis.disconnect();
    }
  });

  it('counts on the memory store too: a pair made to end in 2 days', async () => {
    const seeded = { key: 'ak_memory_seed', secret: 'memory-seed-secret-0123456789abcdef' };
    gateway = await startGateway(
      gatewayYaml({
        upstreamUrl: 'builtin',
        config: {
          ...COUNTED,
          credentials: {
            seed: {
              keys: [
                {
                  key: seeded.key,
                  secretHash: await bcrypt.hash(seeded.secret, TEST_BCRYPT_COST),
                  subject: 'memory',
                },
              ],
            },
          },
        },
      }),
    );
    await untilExpiring(gateway, { '7d': 0, '30d': 0 });
    const made = await send(gateway.url, '/keys', {
      method: 'POST',
      headers: { ...JSON_TYPE, authorization: basicHeader(seeded.key, seeded.secret) },
      body: JSON.stringify({ expires_in: 2 * 86_400 }),
    });
    expect(made.status).toBe(201);
    await untilExpiring(gateway, { '7d': 1, '30d': 1 });
  });
});

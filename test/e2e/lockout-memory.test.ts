import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { expectGatewayError, expectLockRetryAfter } from '../support/expect-gateway-error.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { BCRYPT_COMPARES, scrapeMetric } from '../support/scrape-metric.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// The memory store (what `npm start` runs) is protected by default, in process; and
// `lockout.enabled: false` turns the lockout off while failures are still counted.

const PAIR = { key: 'ak_memory_lockout', secret: 'memory-secret-0123456789abcdefghij' };
/** lockout.basic.keyAddress.threshold by default. */
const DEFAULT_THRESHOLD = 10;

let on: GatewayProcess;
let off: GatewayProcess;

beforeAll(async () => {
  const secretHash = await bcrypt.hash(PAIR.secret, TEST_BCRYPT_COST);
  const yaml = (config: object) =>
    gatewayYaml({
      upstreamUrl: 'builtin',
      config: {
        credentials: { seed: { keys: [{ key: PAIR.key, secretHash, subject: 'memo' }] } },
        logging: { level: 'info', requests: false },
        ...config,
      },
    });
  [on, off] = await Promise.all([
    // Default thresholds and `enabled`; a long first lock, so no slow moment can outlast it.
    startGateway(yaml({ lockout: { initialLockSec: 60 } })),
    startGateway(yaml({ lockout: { enabled: false } })),
  ]);
});

afterAll(async () => {
  await Promise.all([on?.stop(), off?.stop()]);
});

const get = (gateway: GatewayProcess, secret: string, from: string) =>
  send(gateway.url, '/accounts', {
    headers: { authorization: basicHeader(PAIR.key, secret) },
    from,
  });

describe('lockout with the memory store', () => {
  it('is on by default: the default threshold of wrong secrets locks the pair from that address', async () => {
    for (let i = 0; i < DEFAULT_THRESHOLD; i += 1)
      expect((await get(on, `wrong-${i}`, '127.0.4.1')).status).toBe(401);
    const compares = await scrapeMetric(on, BCRYPT_COMPARES);
    const refused = await get(on, PAIR.secret, '127.0.4.1');
    expectGatewayError(refused, 'rate_limited');
    expectLockRetryAfter(refused.headers['retry-after'], 60);
    expect(await scrapeMetric(on, BCRYPT_COMPARES)).toBe(compares);
  });

  it('is off with lockout.enabled false, and failures are still logged and counted', async () => {
    for (let i = 0; i <= DEFAULT_THRESHOLD; i += 1)
      expect((await get(off, `wrong-${i}`, '127.0.4.2')).status).toBe(401);
    expect((await get(off, PAIR.secret, '127.0.4.2')).status).toBe(200);
    expect(
      await scrapeMetric(
        off,
        'gateway_auth_failures_total{scheme="basic",reason="invalid_credentials"}',
      ),
    ).toBe(DEFAULT_THRESHOLD + 1);
  });
});

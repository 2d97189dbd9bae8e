import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateKeyPair } from '../../src/credentials/generate-key-pair.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { untilLogs } from '../support/gateway-logs.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { BCRYPT_COMPARES, scrapeMetric } from '../support/scrape-metric.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// A restart, a SIGHUP that empties the process cache, and a new set of workers each meet
// every pair cold in process; with the records the first process left in Redis, none of them
// runs bcrypt for any of them.

const PAIRS = 12;
const WRITTEN = 'gateway_verified_record_writes_total{result="written"}';
const HITS = 'gateway_verified_record_checks_total{result="hit"}';
const prefix = uniquePrefix('restart');
const pairs = Array.from({ length: PAIRS }, (_, i) => ({
  ...generateKeyPair(`holder-${i}`),
  subject: `holder-${i}`,
}));
let upstream: EchoUpstream;
const started: GatewayProcess[] = [];

function yaml(cacheTtlSec = 60): string {
  return gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: inject('redisUrl'), keyPrefix: prefix },
    config: { auth: { basic: { cache: { ttlSec: cacheTtlSec } } } },
  });
}

async function start(args: string[] = []): Promise<GatewayProcess> {
  const gateway = await startGateway(yaml(), args);
  started.push(gateway);
  return gateway;
}

/** Every pair once, each on a new connection (with workers, spread over them): all 200. */
async function everyPair(gateway: GatewayProcess): Promise<void> {
  for (const pair of pairs) {
    const answer = await fetch(`${gateway.url}/accounts`, {
      headers: { authorization: basicHeader(pair.key, pair.secret), connection: 'close' },
    });
    await answer.arrayBuffer();
    expect(answer.status).toBe(200);
  }
}

beforeAll(async () => {
  upstream = await startEchoUpstream();
  for (const pair of pairs) await seedKey(inject('redisUrl'), prefix, pair);
});

afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.stop()));
  await upstream.close();
});

describe('verified records across restarts, reloads and workers', () => {
  it('runs bcrypt once per pair in the first process, and never again in the next ones', async () => {
    const first = await start();
    await everyPair(first);
    expect(await scrapeMetric(first, BCRYPT_COMPARES)).toBe(PAIRS);
    // The records are written after the answers, without waiting: polled, not slept on.
    while ((await scrapeMetric(first, WRITTEN)) < PAIRS);
    await first.stop();

    const restarted = await start();
    await everyPair(restarted);
    expect(await scrapeMetric(restarted, BCRYPT_COMPARES)).toBe(0);
    expect(await scrapeMetric(restarted, HITS)).toBe(PAIRS);

    // A reload that empties the Basic cache: every pair is met cold again.
    const reloads = restarted.logs.filter((l) => l.msg === 'configuration reloaded').length;
    writeFileSync(restarted.configFile, yaml(30));
    restarted.child.kill('SIGHUP');
    await untilLogs(restarted, 'a reload', (l) => l.msg === 'configuration reloaded', reloads + 1);
    const reloaded = restarted.logs.filter((l) => l.msg === 'configuration reloaded');
    expect(reloaded[reloads]).toMatchObject({ basic_cache: 'emptied' });
    await everyPair(restarted);
    expect(await scrapeMetric(restarted, BCRYPT_COMPARES)).toBe(0);
    expect(await scrapeMetric(restarted, HITS)).toBe(2 * PAIRS);
    await restarted.stop();

    const workers = await start(['--workers', '2']);
    await everyPair(workers);
    await everyPair(workers);
    expect(await scrapeMetric(workers, BCRYPT_COMPARES)).toBe(0);
  });
});

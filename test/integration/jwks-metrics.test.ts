import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearerHeader } from '../support/basic-header.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { startJwksIssuer, type JwksIssuer } from '../support/jwks-issuer.js';
import { sample } from '../support/scrape-metric.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// gateway_jwks_fetches_total, gateway_jwks_fetch_failures_total and
// gateway_jwks_key_set_age_seconds (issue 16 point 2): a gateway in this process whose one
// issuer publishes its keys at a JWKS endpoint the test serves on port 0, answering 200 with
// the key set or 500. The gateway's clock is the test's, so the age grows by steps it makes.

let issuer: JwksIssuer;
let gateway: RunningGateway;
let offsetMs = 0;
const now = (): number => Date.now() + offsetMs;

beforeAll(async () => {
  issuer = await startJwksIssuer();
  gateway = await startInProcessGateway({
    redisUrl: inject('redisUrl'),
    keyPrefix: uniquePrefix('jwksmetrics'),
    upstreamUrl: 'builtin',
    now,
    config: {
      auth: {
        bearer: {
          // An unknown kid is fetched for at once (jose's cooldown would hold it 30 s): the
          // scrapes between the requests below take longer than 1 ms.
          issuers: [issuer.entry({ jwks: { cooldownMs: 1 } })],
        },
      },
    },
  });
});

afterAll(async () => {
  await gateway?.close();
  await issuer?.close();
});

async function statusWith(kid: string): Promise<number> {
  const res = await send(gateway.url, '/accounts', {
    headers: { authorization: bearerHeader(await issuer.token(kid, now())) },
  });
  return res.status;
}

async function scrape(): Promise<{ fetches: number; failures: number; age: number | undefined }> {
  const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  const label = `{issuer="${issuer.issuer}"}`;
  const age = `gateway_jwks_key_set_age_seconds${label}`;
  return {
    fetches: sample(text, `gateway_jwks_fetches_total${label}`),
    failures: sample(text, `gateway_jwks_fetch_failures_total${label}`),
    age: text.split('\n').some((line) => line.startsWith(`${age} `))
      ? sample(text, age)
      : undefined,
  };
}

describe('JWKS metrics', () => {
  it('count a fetch per key set read and per failure, and give the age of the key set in use', async () => {
    // Shown at 0 from the start; no key set yet, so no age.
    const before = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    expect(before).toContain(`gateway_jwks_fetches_total{issuer="${issuer.issuer}"} 0`);
    expect(before).toContain(`gateway_jwks_fetch_failures_total{issuer="${issuer.issuer}"} 0`);
    expect(await scrape()).toEqual({ fetches: 0, failures: 0, age: undefined });

    expect(await statusWith('k1')).toBe(200);
    const fetched = await scrape();
    expect(fetched).toMatchObject({ fetches: 1, failures: 0 });
    expect(fetched.age).toBeGreaterThanOrEqual(0);

    offsetMs += 5_000;
    const later = await scrape();
    expect(later.age).toBeGreaterThan(fetched.age ?? Infinity);

    // A kid the set lacks makes the gateway fetch again; the endpoint fails, and the last good
    // set lacks the kid: 401 (a 503 would let any junk token page on-call).
    issuer.answer('error');
    expect(await statusWith('k2')).toBe(401);
    expect(await scrape()).toMatchObject({ fetches: 2, failures: 1 });
    expect(issuer.hits()).toBe(2);
    // The key set in use is still the first one: its age goes on.
    offsetMs += 1_000;
    expect((await scrape()).age).toBeGreaterThan(later.age ?? Infinity);
    // And it still verifies the tokens it holds a key for.
    expect(await statusWith('k1')).toBe(200);
  });
});

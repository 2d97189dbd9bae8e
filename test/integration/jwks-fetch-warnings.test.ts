import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearerHeader } from '../support/basic-header.js';
import { capturedLogger, type CapturedLogger } from '../support/captured-logger.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { startJwksIssuer, type JwksIssuer } from '../support/jwks-issuer.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// A JWKS endpoint that fails shows in the log (audit 16 finding 12), not only in the
// metrics: one warning per issuer a minute at most, naming the issuer and why, with the
// count of the failures held back since. The gateway's clock is the test's.

let issuer: JwksIssuer;
let gateway: RunningGateway;
let log: CapturedLogger;
let offsetMs = 0;
const now = (): number => Date.now() + offsetMs;
const WARNING = 'JWKS fetch failed';

beforeAll(async () => {
  issuer = await startJwksIssuer();
  log = capturedLogger('info');
  gateway = await startInProcessGateway({
    redisUrl: inject('redisUrl'),
    keyPrefix: uniquePrefix('jwkswarn'),
    upstreamUrl: 'builtin',
    now,
    logger: log.logger,
    config: { auth: { bearer: { issuers: [issuer.entry({ jwks: { cooldownMs: 1 } })] } } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await issuer?.close();
});

/** A request with a token of the issuer, once the backoff of the last failure has passed. */
async function statusAfter(stepMs: number): Promise<{ status: number; token: string }> {
  offsetMs += stepMs;
  const token = await issuer.token('k1', now());
  const res = await send(gateway.url, '/accounts', {
    headers: { authorization: bearerHeader(token) },
  });
  return { status: res.status, token };
}

const warnings = (): Record<string, unknown>[] => {
  log.logger.flush();
  return log.lines.filter((line) => line.msg === WARNING);
};

describe('a failing JWKS endpoint', () => {
  it('is one warning per issuer a minute, naming the issuer and why, with the count held back', async () => {
    issuer.answer('error');
    const first = await statusAfter(0);
    expect(first.status).toBe(503);
    const line = await log.until(WARNING);
    expect(line).toMatchObject({
      level: 40,
      issuer: issuer.issuer,
      reason: 'status 500',
      suppressed: 0,
    });
    expect(JSON.stringify(line)).not.toContain(first.token);

    // Two more failures within the minute (each past the backoff): counted, not written.
    expect((await statusAfter(5_000)).status).toBe(503);
    issuer.answer('not-keys');
    expect((await statusAfter(10_000)).status).toBe(503);
    expect(issuer.hits()).toBe(3);
    expect(warnings()).toHaveLength(1);

    // A minute after the first warning: the next failure is written, with the two held back.
    expect((await statusAfter(60_000)).status).toBe(503);
    expect(issuer.hits()).toBe(4);
    await log.until(WARNING, { suppressed: 2 });
    expect(warnings().map(({ reason, suppressed }) => ({ reason, suppressed }))).toEqual([
      { reason: 'status 500', suppressed: 0 },
      { reason: 'not a JSON Web Key Set', suppressed: 2 },
    ]);
  });
});

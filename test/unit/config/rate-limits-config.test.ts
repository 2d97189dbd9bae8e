import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/load-config.js';
import { createMemoryBackend } from '../../../src/backends/memory/memory-backend.js';
import { createConfiguredRateLimiter } from '../../../src/protection/configured-rate-limiter.js';

function problemsOf(yaml: string): readonly string[] {
  try {
    parseConfig(yaml, 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

const backend = createMemoryBackend();
const deps = {
  buckets: (options: { maxTrackedBuckets: number }) => backend.buckets(options),
  countStoreError: () => undefined,
  warnStoreError: () => undefined,
  warnMalformedOverride: () => undefined,
};

describe('rateLimits config', () => {
  it('sets no limit by default, so the gateway checks nothing', () => {
    const config = parseConfig('', 'test.yaml');
    expect(config.rateLimits).toEqual({
      onStoreError: 'open',
      storeErrorLogIntervalSec: 60,
      maxTrackedBuckets: 100_000,
      lease: { spanMs: 25, lifeMs: 1000 },
    });
    expect(config.routes[0]?.rateLimit).toBeUndefined();
    expect(createConfiguredRateLimiter(config, deps)).toBeUndefined();
  });

  it('reads the policies, burst defaulting to a whole period, and makes a limiter', () => {
    const config = parseConfig(
      `
rateLimits:
  credential: { requests: 600, periodSec: 60, burst: 100 }
  address: { requests: "30", periodSec: 60 }
  onStoreError: closed
routes:
  - name: accounts
    paths: [/accounts]
    upstream: accounts
    upstreamPath: /accounts
    rateLimit: { requests: 10, periodSec: 1 }
`,
      'test.yaml',
    );
    // Lease mode and enforced unless said otherwise.
    const defaults = { mode: 'lease', shadow: false };
    expect(config.rateLimits.credential).toEqual({
      requests: 600,
      periodSec: 60,
      burst: 100,
      ...defaults,
    });
    expect(config.rateLimits.address).toEqual({ requests: 30, periodSec: 60, ...defaults });
    expect(config.routes[0]?.rateLimit).toEqual({ requests: 10, periodSec: 1, ...defaults });
    const limiter = createConfiguredRateLimiter(config, deps);
    expect(limiter?.checkAddress('192.0.2.1')).toMatchObject({
      allowed: true,
      policyHeader: '"address";q=30;w=60',
      limitHeader: '"address";r=29;t=2',
    });
  });

  it('reads a mode and shadow per limit, and refuses an unknown mode', () => {
    const config = parseConfig(
      'rateLimits:\n  credential: { requests: 5, periodSec: 1, mode: exact, shadow: true }\n',
      'test.yaml',
    );
    expect(config.rateLimits.credential).toMatchObject({ mode: 'exact', shadow: true });
    expect(() =>
      parseConfig(
        'rateLimits:\n  credential: { requests: 5, periodSec: 1, mode: fast }\n',
        't.yaml',
      ),
    ).toThrow(/rateLimits\.credential\.mode/);
  });

  it('turns a subject policy alone into a limiter that counts every pair of a subject together', () => {
    const config = parseConfig(
      'rateLimits:\n  subject: { requests: 2, periodSec: 3600 }\n',
      'test.yaml',
    );
    expect(config.rateLimits.subject).toEqual({
      requests: 2,
      periodSec: 3600,
      mode: 'lease',
      shadow: false,
    });
    const limiter = createConfiguredRateLimiter(config, deps);
    const pair = (key: string) => ({ subject: 'alice', method: 'basic', key, scopes: [] }) as const;
    const verdicts = ['ak_one', 'ak_two', 'ak_three'].map((key) =>
      limiter?.checkCredential('accounts', undefined, pair(key)),
    );
    expect(verdicts).toMatchObject([
      { allowed: true, policyHeader: '"subject";q=2;w=3600' },
      { allowed: true },
      { allowed: false, refusedBy: 'subject' },
    ]);
  });

  it('turns a route policy alone into a limiter', () => {
    const config = parseConfig(
      `
routes:
  - { name: a, paths: [/a], upstream: accounts, upstreamPath: /a, rateLimit: { requests: 1, periodSec: 1 } }
`,
      'test.yaml',
    );
    expect(createConfiguredRateLimiter(config, deps)).toBeDefined();
  });

  it('names the YAML path of every bad setting', () => {
    const problems = problemsOf(`
rateLimits:
  credential: { requests: 0, periodSec: 60 }
  address: { requests: 10, periodSec: 60, burst: 0, window: 3 }
  onStoreError: maybe
routes:
  - { name: a, paths: [/a], upstream: accounts, upstreamPath: /a, rateLimit: { periodSec: 1 } }
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^rateLimits\.credential\.requests: /),
        expect.stringMatching(/^rateLimits\.address\.burst: /),
        'rateLimits.address: unknown key window',
        expect.stringMatching(/^rateLimits\.onStoreError: /),
        expect.stringMatching(/^routes\[0\]\.rateLimit\.requests: /),
      ]),
    );
  });
});

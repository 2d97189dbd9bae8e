import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  emissionIntervalUs,
  gcra,
  parseRateLimitOverride,
  peek,
  type RatePolicy,
} from '../../../src/protection/rate-policy.js';

const SEC = 1_000_000;

/** Runs `times` (µs, ascending) through one bucket; the times that were admitted. */
function admitted(policy: RatePolicy, times: readonly number[]): number[] {
  let tat: number | undefined;
  const passed: number[] = [];
  for (const now of times) {
    const step = gcra(tat, now, policy);
    if (step.allowed) {
      tat = step.tatUs;
      passed.push(now);
    }
  }
  return passed;
}

describe('gcra', () => {
  const policy = { requests: 10, periodSec: 10, burst: 3 };

  it('admits the burst at once, then refuses, telling how long until one more passes', () => {
    const now = 1_000 * SEC;
    let tat: number | undefined;
    const remaining: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const step = gcra(tat, now, policy);
      expect(step.allowed).toBe(true);
      tat = step.tatUs;
      remaining.push(step.remaining);
    }
    expect(remaining).toEqual([2, 1, 0]);
    const refused = gcra(tat, now, policy);
    expect(refused).toEqual({
      allowed: false,
      tatUs: tat,
      granted: 0,
      remaining: 0,
      waitUs: 1 * SEC,
    });
    expect(gcra(tat, now + SEC, policy).allowed).toBe(true);
  });

  it('says how long until the bucket is full again', () => {
    const step = gcra(undefined, 0, policy);
    expect(step.waitUs).toBe(SEC);
    expect(peek(step.tatUs, 0, policy)).toEqual({
      allowed: true,
      tatUs: SEC,
      granted: 0,
      remaining: 2,
      waitUs: SEC,
    });
  });

  it('charges up to `count` requests at once, as many as the bucket holds, like that many takes', () => {
    const lease = gcra(undefined, 0, policy, 2);
    let tat: number | undefined;
    for (let i = 0; i < 2; i += 1) tat = gcra(tat, 0, policy).tatUs;
    expect(lease).toMatchObject({ allowed: true, granted: 2, remaining: 1, tatUs: tat });
    // Only one is left: a lease of five gets it; then nothing is, and a lease is refused.
    const rest = gcra(lease.tatUs, 0, policy, 5);
    expect(rest).toMatchObject({ allowed: true, granted: 1, remaining: 0 });
    expect(gcra(rest.tatUs, 0, policy, 5)).toMatchObject({ allowed: false, granted: 0 });
  });

  it('forgets a bucket whose TAT has passed: it is full again', () => {
    expect(gcra(5 * SEC, 100 * SEC, policy)).toEqual(gcra(undefined, 100 * SEC, policy));
  });

  it('never admits more than burst + elapsed × rate over any interval', () => {
    fc.assert(
      fc.property(
        fc.record({
          requests: fc.integer({ min: 1, max: 1000 }),
          periodSec: fc.integer({ min: 1, max: 120 }),
          burst: fc.integer({ min: 1, max: 50 }),
        }),
        fc.array(fc.integer({ min: 0, max: 5 * SEC }), { minLength: 1, maxLength: 300 }),
        (p, gaps) => {
          let now = 0;
          const times = gaps.map((gap) => (now += gap));
          const passed = admitted(p, times);
          const interval = emissionIntervalUs(p);
          // Every window [passed[i], passed[j]] holds j - i + 1 admissions.
          for (let i = 0; i < passed.length; i += 1) {
            for (let j = i; j < passed.length; j += 1) {
              const elapsed = (passed[j] ?? 0) - (passed[i] ?? 0);
              expect(j - i + 1).toBeLessThanOrEqual(p.burst + elapsed / interval);
            }
          }
        },
      ),
    );
  });

  it('admits every request of a client that keeps to the rate', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 20 }),
        (requests, periodSec, burst) => {
          const p = { requests, periodSec, burst };
          const interval = emissionIntervalUs(p);
          const times = Array.from({ length: 50 }, (_, i) => i * interval);
          expect(admitted(p, times)).toHaveLength(50);
        },
      ),
    );
  });
});

describe('parseRateLimitOverride', () => {
  it.each([
    ['600/60', { requests: 600, periodSec: 60, burst: 600 }],
    ['600/60,100', { requests: 600, periodSec: 60, burst: 100 }],
    ['1/1', { requests: 1, periodSec: 1, burst: 1 }],
    ['none', 'none'],
  ])('reads %s', (value, expected) => {
    expect(parseRateLimitOverride(value)).toEqual(expected);
  });

  it.each([
    '',
    '0/60',
    '10/0',
    '10/60,0',
    '10/60,',
    ' 10/60',
    '10 / 60',
    '10/60s',
    '1e3/60',
    'None',
    '-1/60',
  ])('ignores %j', (value) => {
    expect(parseRateLimitOverride(value)).toBeUndefined();
  });
});

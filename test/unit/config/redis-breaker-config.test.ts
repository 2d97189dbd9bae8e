import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { configProblems } from '../../support/config-problems.js';

// credentials.redis.breaker: on by default with the timing circuit-breaker.ts suggests,
// every number bounded, and the cap never below the first wait.

const problemsOf = configProblems;

const breakerOf = (breaker: string) =>
  parseConfig(`credentials:\n  redis:\n    breaker: ${breaker}\n`, 'test.yaml').credentials.redis
    .breaker;

describe('credentials.redis.breaker', () => {
  it('is on by default: 3 failures in a row open it, probed after 200 ms and at most every second', () => {
    expect(parseConfig('', 'test.yaml').credentials.redis.breaker).toEqual({
      enabled: true,
      failureThreshold: 3,
      openMs: 200,
      maxOpenMs: 1000,
    });
  });

  it('takes each setting on its own, and numbers and booleans written as strings', () => {
    expect(breakerOf('{ enabled: false }')).toMatchObject({ enabled: false, failureThreshold: 3 });
    expect(breakerOf('{ failureThreshold: "5", openMs: 50, maxOpenMs: 50 }')).toEqual({
      enabled: true,
      failureThreshold: 5,
      openMs: 50,
      maxOpenMs: 50,
    });
  });

  it('refuses a cap below the first wait, naming the cap', () => {
    expect(
      problemsOf('credentials:\n  redis:\n    breaker: { openMs: 500, maxOpenMs: 400 }'),
    ).toEqual(['credentials.redis.breaker.maxOpenMs: must be at least openMs']);
  });

  it('refuses numbers out of range and unknown keys, every problem at once', () => {
    expect(
      problemsOf(
        'credentials:\n  redis:\n    breaker: { failureThreshold: 0, openMs: 5, maxOpenMs: 600001, probes: 1 }',
      ),
    ).toEqual([
      'credentials.redis.breaker.failureThreshold: must be at least 1',
      'credentials.redis.breaker.openMs: must be at least 10',
      'credentials.redis.breaker.maxOpenMs: must be at most 600000',
      'credentials.redis.breaker: unknown key probes',
    ]);
  });
});

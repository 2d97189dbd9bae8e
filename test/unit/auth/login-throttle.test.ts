import { describe, expect, it } from 'vitest';
import { createLoginThrottle } from '../../../src/auth/login-throttle.js';
import type { LoginConfig } from '../../../src/config/config-schema.js';

const CONFIG: LoginConfig = {
  windowSec: 60,
  slowAfterFailures: 2,
  delayMs: 1_000,
  maxFailures: 10,
  maxTrackedClients: 1_000,
};

function throttle(config: Partial<LoginConfig> = {}) {
  const clock = { ms: Date.UTC(2030, 0, 1) };
  const subject = createLoginThrottle({ ...CONFIG, ...config }, () => clock.ms);
  const failTimes = (n: number, username: string, address: string): void => {
    for (let i = 0; i < n; i += 1) subject.recordFailure(username, address);
  };
  return { throttle: subject, clock, failTimes };
}

describe('login throttle', () => {
  it('allows without delay before any failure', () => {
    const { throttle: t } = throttle();
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('adds no delay up to slowAfterFailures failures', () => {
    const { throttle: t, failTimes } = throttle();
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('delays each attempt past slowAfterFailures by delayMs per failure beyond it', () => {
    const { throttle: t, failTimes } = throttle();
    failTimes(3, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 1_000 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 2_000 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 3_000 });
  });

  it('caps the delay at 5 seconds however many failures there were', () => {
    const { throttle: t, failTimes } = throttle({ maxFailures: 100, delayMs: 2_000 });
    failTimes(5, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 5_000 });
    failTimes(50, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 5_000 });
  });

  it('refuses with the seconds left in the window once maxFailures is reached', () => {
    const { throttle: t, clock, failTimes } = throttle({ maxFailures: 4 });
    failTimes(3, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1').kind).toBe('allow');
    clock.ms += 15_000;
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 45 });
    clock.ms += 44_500;
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 1 });
  });

  it('resets the count once the window has passed', () => {
    const { throttle: t, clock, failTimes } = throttle({ maxFailures: 3 });
    failTimes(3, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1').kind).toBe('refuse');
    clock.ms += 60_000;
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    // A new window starts with the next failure: one failure is far from the limit again.
    failTimes(1, 'alice', '10.0.0.1');
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('counts failures per username across client addresses', () => {
    const { throttle: t } = throttle({ maxFailures: 3 });
    t.recordFailure('alice', '10.0.0.1');
    t.recordFailure('alice', '10.0.0.2');
    t.recordFailure('alice', '10.0.0.3');
    expect(t.check('alice', '10.0.0.9')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    // Another username from a fresh address is not affected.
    expect(t.check('bob', '10.0.0.9')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('counts failures per client address across usernames', () => {
    const { throttle: t } = throttle({ maxFailures: 3 });
    t.recordFailure('alice', '10.0.0.1');
    t.recordFailure('bob', '10.0.0.1');
    t.recordFailure('carol', '10.0.0.1');
    expect(t.check('dave', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    // The same username from another address is not affected.
    expect(t.check('dave', '10.0.0.2')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('decides by the worse of the username and the address counts', () => {
    const { throttle: t, failTimes } = throttle({ maxFailures: 10 });
    failTimes(4, 'alice', '10.0.0.1');
    failTimes(2, 'bob', '10.0.0.2');
    // bob has 2 (no delay); address 10.0.0.1 has 4 (2 beyond slowAfterFailures).
    expect(t.check('bob', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 2_000 });
  });

  it('clears the username on success but keeps counting the address', () => {
    const { throttle: t, failTimes } = throttle({ maxFailures: 3 });
    failTimes(3, 'alice', '10.0.0.1');
    t.recordSuccess('alice');
    expect(t.check('alice', '10.0.0.2')).toEqual({ kind: 'allow', delayMs: 0 });
    expect(t.check('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('counts unknown usernames exactly like known ones', () => {
    // The throttle is never told whether a username exists: two names, the same answers.
    const known = throttle({ maxFailures: 4 });
    const unknown = throttle({ maxFailures: 4 });
    const answers = (t: ReturnType<typeof throttle>, username: string) => {
      const seen = [];
      for (let i = 0; i < 5; i += 1) {
        seen.push(t.throttle.check(username, '10.0.0.1'));
        t.throttle.recordFailure(username, '10.0.0.1');
      }
      return seen;
    };
    const a = answers(known, 'alice');
    expect(answers(unknown, 'no-such-user')).toEqual(a);
    expect(a.at(-1)).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });
});

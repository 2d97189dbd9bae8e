import { describe, expect, it } from 'vitest';
import {
  createLoginThrottle,
  type LoginAttempt,
  type LoginOutcome,
  type ThrottleDecision,
} from '../../../src/protection/login-throttle.js';
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
    for (let i = 0; i < n; i += 1) settle(subject.begin(username, address), 'failure');
  };
  /** The decision for the next attempt, which is then given back without a verdict. */
  const peek = (username: string, address: string) => {
    const decision = subject.begin(username, address);
    if (decision.kind === 'refuse') return decision;
    decision.attempt.settle('error');
    return { kind: decision.kind, delayMs: decision.delayMs };
  };
  return { throttle: subject, clock, failTimes, peek };
}

/** Settles an attempt the test expects to have been allowed. */
function settle(decision: ThrottleDecision, outcome: LoginOutcome): void {
  if (decision.kind !== 'allow')
    throw new Error(`expected an allowed attempt, got ${decision.kind}`);
  decision.attempt.settle(outcome);
}

/** Begins an attempt the test expects to be allowed, and leaves it in flight. */
function inFlight(decision: ThrottleDecision): LoginAttempt {
  if (decision.kind !== 'allow')
    throw new Error(`expected an allowed attempt, got ${decision.kind}`);
  return decision.attempt;
}

describe('login throttle', () => {
  it('allows without delay before any failure', () => {
    const { peek } = throttle();
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('adds no delay up to slowAfterFailures failures', () => {
    const { peek, failTimes } = throttle();
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('delays each attempt past slowAfterFailures by delayMs per failure beyond it', () => {
    const { peek, failTimes } = throttle();
    failTimes(3, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 1_000 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 2_000 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 3_000 });
  });

  it('caps the delay at 5 seconds however many failures there were', () => {
    const { peek, failTimes } = throttle({ maxFailures: 100, delayMs: 2_000 });
    failTimes(5, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 5_000 });
    failTimes(50, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 5_000 });
  });

  it('refuses with the seconds left in the window once maxFailures is reached', () => {
    const { peek, clock, failTimes } = throttle({ maxFailures: 4 });
    failTimes(3, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1').kind).toBe('allow');
    clock.ms += 15_000;
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 45 });
    clock.ms += 44_500;
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 1 });
  });

  it('resets the count once the window has passed', () => {
    const { peek, clock, failTimes } = throttle({ maxFailures: 3 });
    failTimes(3, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1').kind).toBe('refuse');
    clock.ms += 60_000;
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    // A new window starts with the next failure: one failure is far from the limit again.
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('counts failures per username across client addresses', () => {
    const { peek, failTimes } = throttle({ maxFailures: 3 });
    failTimes(1, 'alice', '10.0.0.1');
    failTimes(1, 'alice', '10.0.0.2');
    failTimes(1, 'alice', '10.0.0.3');
    expect(peek('alice', '10.0.0.9')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    // Another username from a fresh address is not affected.
    expect(peek('bob', '10.0.0.9')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('counts failures per client address across usernames', () => {
    const { peek, failTimes } = throttle({ maxFailures: 3 });
    failTimes(1, 'alice', '10.0.0.1');
    failTimes(1, 'bob', '10.0.0.1');
    failTimes(1, 'carol', '10.0.0.1');
    expect(peek('dave', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    // The same username from another address is not affected.
    expect(peek('dave', '10.0.0.2')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('decides by the worse of the username and the address counts', () => {
    const { peek, failTimes } = throttle({ maxFailures: 10 });
    failTimes(4, 'alice', '10.0.0.1');
    failTimes(2, 'bob', '10.0.0.2');
    // bob has 2 (no delay); address 10.0.0.1 has 4 (2 beyond slowAfterFailures).
    expect(peek('bob', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 2_000 });
  });

  it('clears the username on success but keeps counting the address', () => {
    const { throttle: t, peek, failTimes } = throttle({ maxFailures: 3 });
    failTimes(2, 'alice', '10.0.0.1');
    settle(t.begin('alice', '10.0.0.1'), 'success');
    // alice starts again from nothing: two more failures leave her one short of the limit.
    failTimes(2, 'alice', '10.0.0.2');
    expect(peek('alice', '10.0.0.2')).toEqual({ kind: 'allow', delayMs: 0 });
    // Her first address still carries its two failures.
    failTimes(1, 'bob', '10.0.0.1');
    expect(peek('carol', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('counts unknown usernames exactly like known ones', () => {
    // The throttle is never told whether a username exists: two names, the same answers.
    const known = throttle({ maxFailures: 4 });
    const unknown = throttle({ maxFailures: 4 });
    const answers = (t: ReturnType<typeof throttle>, username: string) => {
      const seen: unknown[] = [];
      for (let i = 0; i < 5; i += 1) {
        const decision = t.throttle.begin(username, '10.0.0.1');
        if (decision.kind === 'refuse') {
          seen.push(decision);
        } else {
          seen.push({ kind: decision.kind, delayMs: decision.delayMs });
          decision.attempt.settle('failure');
        }
      }
      return seen;
    };
    const a = answers(known, 'alice');
    expect(answers(unknown, 'no-such-user')).toEqual(a);
    expect(a.at(-1)).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });
});

describe('login throttle: attempts still in flight', () => {
  it('refuses once maxFailures attempts are under way, before any of them has failed', () => {
    const { throttle: t } = throttle({ maxFailures: 3 });
    for (let i = 0; i < 3; i += 1) inFlight(t.begin('alice', `10.0.0.${i + 1}`));
    expect(t.begin('alice', '10.0.0.9')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('refuses an address with maxFailures attempts under way, whatever the usernames', () => {
    const { throttle: t } = throttle({ maxFailures: 3 });
    for (const username of ['alice', 'bob', 'carol']) inFlight(t.begin(username, '10.0.0.1'));
    expect(t.begin('dave', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    expect(t.checkAddress('10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('slows parallel attempts as if the earlier ones had already failed', () => {
    const { throttle: t } = throttle({ slowAfterFailures: 2, delayMs: 1_000, maxFailures: 10 });
    const delays = Array.from({ length: 5 }, () => {
      const decision = t.begin('alice', '10.0.0.1');
      return decision.kind === 'allow' ? decision.delayMs : decision.kind;
    });
    // Like serial failures: the attempt with 3 before it (1 beyond slowAfterFailures) waits.
    expect(delays).toEqual([0, 0, 0, 1_000, 2_000]);
  });

  it('gives the reservation back when an attempt succeeds', () => {
    const { throttle: t, peek } = throttle({ maxFailures: 2 });
    const first = inFlight(t.begin('alice', '10.0.0.1'));
    inFlight(t.begin('alice', '10.0.0.2'));
    expect(peek('alice', '10.0.0.3').kind).toBe('refuse');
    first.settle('success');
    expect(peek('alice', '10.0.0.3')).toEqual({ kind: 'allow', delayMs: 0 });
  });

  it('gives the reservation back, counting no failure, when an attempt ends in an error', () => {
    const { throttle: t, peek, failTimes } = throttle({ maxFailures: 2 });
    const first = inFlight(t.begin('alice', '10.0.0.1'));
    inFlight(t.begin('alice', '10.0.0.1'));
    expect(peek('alice', '10.0.0.1').kind).toBe('refuse');
    first.settle('error');
    // One attempt still in flight, no failure: one more fits, then the limit is reached.
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1').kind).toBe('refuse');
  });

  it('turns a reservation into one failure, however often the attempt is settled', () => {
    const { throttle: t, peek } = throttle({ maxFailures: 2 });
    const attempt = inFlight(t.begin('alice', '10.0.0.1'));
    attempt.settle('failure');
    attempt.settle('failure');
    attempt.settle('success');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    settle(t.begin('alice', '10.0.0.1'), 'failure');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('keeps attempts in flight counted when another attempt clears the username', () => {
    const { throttle: t } = throttle({ maxFailures: 3 });
    const winner = inFlight(t.begin('alice', '10.0.0.1'));
    inFlight(t.begin('alice', '10.0.0.2'));
    inFlight(t.begin('alice', '10.0.0.3'));
    winner.settle('success');
    inFlight(t.begin('alice', '10.0.0.4'));
    expect(t.begin('alice', '10.0.0.5')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('counts a failure in the window current when it ends, not the one it began in', () => {
    const { throttle: t, clock, peek, failTimes } = throttle({ maxFailures: 2 });
    failTimes(1, 'alice', '10.0.0.1');
    const slow = inFlight(t.begin('alice', '10.0.0.1'));
    clock.ms += 60_000;
    slow.settle('failure');
    // The first failure has expired; this one opened a new 60 s window.
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
    failTimes(1, 'alice', '10.0.0.1');
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });

  it('answers with the longer wait when both the username and the address are refused', () => {
    const { throttle: t, clock, failTimes } = throttle({ maxFailures: 2 });
    failTimes(2, 'alice', '10.0.0.1');
    clock.ms += 30_000;
    failTimes(2, 'bob', '10.0.0.2');
    // alice's window has 30 s left; address 10.0.0.2's has 60 s.
    expect(t.begin('alice', '10.0.0.2')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
    expect(t.begin('bob', '10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 60 });
  });
});

describe('login throttle: checkAddress', () => {
  it('refuses an address at its limit before the username is known', () => {
    const { throttle: t, clock, failTimes } = throttle({ maxFailures: 3 });
    for (const username of ['alice', 'bob', 'carol']) failTimes(1, username, '10.0.0.1');
    clock.ms += 20_000;
    expect(t.checkAddress('10.0.0.1')).toEqual({ kind: 'refuse', retryAfterSec: 40 });
    expect(t.checkAddress('10.0.0.2')).toBeUndefined();
  });

  it('does not refuse an address for its usernames’ failures elsewhere', () => {
    const { throttle: t, failTimes } = throttle({ maxFailures: 4 });
    failTimes(2, 'alice', '10.0.0.1');
    failTimes(2, 'alice', '10.0.0.2');
    // alice is refused now, but only once she is named.
    expect(t.checkAddress('10.0.0.1')).toBeUndefined();
  });

  it('reserves nothing', () => {
    const { throttle: t, peek } = throttle({ maxFailures: 1 });
    for (let i = 0; i < 5; i += 1) expect(t.checkAddress('10.0.0.1')).toBeUndefined();
    expect(peek('alice', '10.0.0.1')).toEqual({ kind: 'allow', delayMs: 0 });
  });
});

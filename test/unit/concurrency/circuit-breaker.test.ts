import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CircuitOpenError,
  createCircuitBreaker,
  type Admission,
  type BreakerChange,
  type CircuitBreakerOptions,
} from '../../../src/concurrency/circuit-breaker.js';

const TIMING = { failureThreshold: 3, openMs: 200, maxOpenMs: 1000, probeTimeoutMs: 700 };

/** A breaker on a clock the test moves by hand, with the changes it reported. */
function setup(options: Partial<Omit<CircuitBreakerOptions, 'now' | 'onChange'>> = {}) {
  let time = 1_000_000;
  const changes: BreakerChange[] = [];
  const breaker = createCircuitBreaker({
    ...TIMING,
    ...options,
    now: () => time,
    onChange: (change) => changes.push(change),
  });
  const advance = (ms: number): void => {
    time += ms;
  };
  /** Admits and settles one call, returning the admission. */
  const call = (outcome: 'success' | 'failure'): Admission => {
    const admission = breaker.admit();
    if (admission.admitted) admission.settle(outcome);
    return admission;
  };
  const fail = (times: number): void => {
    for (let i = 0; i < times; i += 1) call('failure');
  };
  return { breaker, changes, advance, call, fail };
}

/** The admission of a call that went, failing the test otherwise. */
function went(admission: Admission): Extract<Admission, { admitted: true }> {
  if (!admission.admitted) throw new Error(`refused for ${admission.retryAfterMs} ms`);
  return admission;
}

const REDIS_TIMEOUT = new Error('Command timed out');
const isInfrastructure = (error: unknown) => error === REDIS_TIMEOUT;

describe('createCircuitBreaker: closed', () => {
  it('lets every call through while fewer than failureThreshold fail in a row', () => {
    const { breaker, call, fail, changes } = setup();
    fail(2);
    expect(call('success')).toMatchObject({ admitted: true, probe: false });
    // The success reset the count: two more failures still do not open it.
    fail(2);
    expect(breaker.state).toBe('closed');
    expect(changes).toEqual([]);
  });

  it('opens at the failureThreshold-th failure in a row and says so once', () => {
    const { breaker, fail, changes } = setup();
    fail(3);
    expect(breaker.state).toBe('open');
    expect(changes).toEqual([{ kind: 'opened', failures: 3, retryAfterMs: 200 }]);
  });
});

describe('createCircuitBreaker: open', () => {
  it('refuses at once, with the time left until a probe may go', () => {
    const { breaker, fail, advance } = setup();
    fail(3);
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 200 });
    advance(150);
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 50 });
    advance(49);
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 1 });
  });

  it('lets exactly one probe through once openMs has passed, and refuses the rest while it is out', () => {
    const { breaker, fail, advance } = setup();
    fail(3);
    advance(200);
    const probe = went(breaker.admit());
    expect(probe.probe).toBe(true);
    expect(breaker.state).toBe('half-open');
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 700 });
    advance(100);
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 600 });
  });

  it('closes when the probe succeeds, says how long it was open, and starts counting afresh', () => {
    const { breaker, fail, advance, changes, call } = setup();
    fail(3);
    advance(200);
    const probe = went(breaker.admit());
    advance(30);
    probe.settle('success');
    expect(breaker.state).toBe('closed');
    expect(changes.at(-1)).toEqual({ kind: 'closed', openForMs: 230 });
    expect(call('success')).toMatchObject({ admitted: true, probe: false });
    fail(2);
    expect(breaker.state).toBe('closed');
  });

  it('doubles the wait after each failed probe up to maxOpenMs, without a change reported for each', () => {
    const { breaker, fail, advance, changes } = setup();
    fail(3);
    const waits: number[] = [];
    for (let round = 0; round < 5; round += 1) {
      const refused = breaker.admit();
      if (refused.admitted) throw new Error('admitted while open');
      waits.push(refused.retryAfterMs);
      advance(refused.retryAfterMs);
      went(breaker.admit()).settle('failure');
    }
    expect(waits).toEqual([200, 400, 800, 1000, 1000]);
    expect(changes).toEqual([{ kind: 'opened', failures: 3, retryAfterMs: 200 }]);
  });

  it('lets the next call probe at once when told the dependency is back, keeping the backoff for a failed probe', () => {
    const { breaker, call, fail, advance, changes } = setup();
    fail(3);
    advance(200);
    expect(call('failure')).toMatchObject({ admitted: true, probe: true });
    breaker.probeNow();
    expect(call('failure')).toMatchObject({ admitted: true, probe: true });
    // Failed again: 800 ms (the backoff kept doubling), not 200.
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 800 });
    breaker.probeNow();
    expect(call('success')).toMatchObject({ admitted: true, probe: true });
    expect(changes.map((change) => change.kind)).toEqual(['opened', 'closed']);
  });

  it('ignores being told the dependency is back while closed or while a probe is out', () => {
    const { breaker, fail, advance } = setup();
    breaker.probeNow();
    expect(breaker.state).toBe('closed');
    fail(3);
    advance(200);
    expect(breaker.admit()).toMatchObject({ admitted: true, probe: true });
    breaker.probeNow();
    expect(breaker.admit()).toMatchObject({ admitted: false });
  });

  it('starts again from openMs after it has closed', () => {
    const { breaker, fail, advance } = setup();
    fail(3);
    advance(200);
    went(breaker.admit()).settle('failure');
    advance(400);
    went(breaker.admit()).settle('success');
    fail(3);
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 200 });
  });

  it('presumes a probe failed once probeTimeoutMs has passed, and ignores its late answer', () => {
    const { breaker, fail, advance, changes } = setup();
    fail(3);
    advance(200);
    const lost = went(breaker.admit());
    advance(700);
    // Presumed failed now: the wait doubled, counted from here.
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 400 });
    lost.settle('success');
    expect(breaker.state).toBe('open');
    advance(400);
    expect(went(breaker.admit()).probe).toBe(true);
    expect(changes.map((c) => c.kind)).toEqual(['opened']);
  });
});

describe('createCircuitBreaker: calls from an earlier state', () => {
  it('ignores the failures of calls that were in flight when it opened', () => {
    const { breaker, fail, advance, changes } = setup();
    const inFlight = Array.from({ length: 10 }, () => went(breaker.admit()));
    fail(3);
    advance(150);
    for (const call of inFlight) call.settle('failure');
    // Still the first backoff from its first opening, neither restarted nor lengthened.
    expect(breaker.admit()).toEqual({ admitted: false, retryAfterMs: 50 });
    expect(changes).toHaveLength(1);
    advance(50);
    went(breaker.admit()).settle('success');
    expect(breaker.state).toBe('closed');
  });

  it('does not count, once closed again, the failures of calls admitted before it opened', () => {
    const { breaker, fail, advance, changes } = setup();
    const stale = Array.from({ length: 3 }, () => went(breaker.admit()));
    fail(3);
    advance(200);
    went(breaker.admit()).settle('success');
    for (const call of stale) call.settle('failure');
    expect(breaker.state).toBe('closed');
    expect(changes.map((c) => c.kind)).toEqual(['opened', 'closed']);
  });

  it('counts each call once, however often it is settled', () => {
    const { breaker } = setup();
    const call = went(breaker.admit());
    for (let i = 0; i < 3; i += 1) call.settle('failure');
    expect(breaker.state).toBe('closed');
  });
});

describe('createCircuitBreaker: run', () => {
  it('passes the call’s value and error on unchanged', async () => {
    const { breaker } = setup();
    await expect(breaker.run(() => Promise.resolve('pong'), isInfrastructure)).resolves.toBe(
      'pong',
    );
    await expect(breaker.run(() => Promise.reject(REDIS_TIMEOUT), isInfrastructure)).rejects.toBe(
      REDIS_TIMEOUT,
    );
  });

  it('counts only what the caller calls an infrastructure failure: a denial and an error reply are answers', async () => {
    const { breaker } = setup();
    const errorReply = new Error('WRONGTYPE Operation against a key holding the wrong kind');
    for (let i = 0; i < 2; i += 1)
      await expect(breaker.run(() => Promise.reject(REDIS_TIMEOUT), isInfrastructure)).rejects.toBe(
        REDIS_TIMEOUT,
      );
    await expect(breaker.run(() => Promise.reject(errorReply), isInfrastructure)).rejects.toBe(
      errorReply,
    );
    for (let i = 0; i < 2; i += 1)
      await expect(breaker.run(() => Promise.reject(REDIS_TIMEOUT), isInfrastructure)).rejects.toBe(
        REDIS_TIMEOUT,
      );
    await expect(
      breaker.run(() => Promise.resolve({ allowed: false }), isInfrastructure),
    ).resolves.toEqual({ allowed: false });
    expect(breaker.state).toBe('closed');
  });

  it('rejects at once with CircuitOpenError and its retryAfterMs when open, without calling', async () => {
    const { breaker, fail } = setup();
    fail(3);
    let calls = 0;
    const refused = await breaker
      .run(() => Promise.resolve((calls += 1)), isInfrastructure)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CircuitOpenError);
    expect(refused).toMatchObject({ retryAfterMs: 200 });
    expect(calls).toBe(0);
  });

  it('closes through a probe that run made', async () => {
    const { breaker, fail, advance } = setup();
    fail(3);
    advance(200);
    await breaker.run(() => Promise.resolve('pong'), isInfrastructure);
    expect(breaker.state).toBe('closed');
  });
});

describe('createCircuitBreaker: options', () => {
  it.each([
    { failureThreshold: 0 },
    { openMs: 0 },
    { maxOpenMs: 100 },
    { probeTimeoutMs: 0 },
    { failureThreshold: Number.NaN },
  ])('refuses %o with a TypeError', (bad) => {
    expect(() => setup(bad)).toThrow(TypeError);
  });
});

describe('createCircuitBreaker: any sequence of calls, answers and time', () => {
  type Step =
    | { kind: 'admit' }
    | { kind: 'settle'; pick: number; outcome: 'success' | 'failure' }
    | { kind: 'advance'; ms: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constant({ kind: 'admit' as const }),
    fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom('success' as const, 'failure' as const),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 1500 }) }),
  );

  it('alternates opened and closed, refuses only while open with a wait > 0, and has one live probe at most', () => {
    fc.assert(
      fc.property(
        // At least 100 steps: shorter runs seldom open the breaker (measured: 7 runs in 100
        // opened it with fast-check's default sizes, 96 with these, 92 closed it again).
        fc.array(step, { minLength: 100, maxLength: 300 }),
        fc.integer({ min: 1, max: 4 }),
        (steps, failureThreshold) => {
          let time = 0;
          const changes: BreakerChange[] = [];
          const breaker = createCircuitBreaker({
            ...TIMING,
            failureThreshold,
            now: () => time,
            onChange: (change) => changes.push(change),
          });
          type Probe = { at: number; settled: boolean };
          const pending: {
            admission: Extract<Admission, { admitted: true }>;
            probe: Probe | undefined;
          }[] = [];
          const probes: Probe[] = [];
          const admit = (): void => {
            const closed = breaker.state === 'closed';
            const admission = breaker.admit();
            if (!admission.admitted) {
              expect(closed).toBe(false);
              expect(admission.retryAfterMs).toBeGreaterThan(0);
              expect(admission.retryAfterMs).toBeLessThanOrEqual(TIMING.maxOpenMs);
              return;
            }
            let probe: Probe | undefined;
            if (admission.probe) {
              // Every earlier probe has answered or is past its deadline.
              for (const p of probes)
                expect(p.settled || time - p.at >= TIMING.probeTimeoutMs).toBe(true);
              probe = { at: time, settled: false };
              probes.push(probe);
            }
            pending.push({ admission, probe });
          };
          for (const s of steps) {
            if (s.kind === 'advance') time += s.ms;
            else if (s.kind === 'admit') admit();
            else {
              const [taken] = pending.splice(s.pick % Math.max(pending.length, 1), 1);
              taken?.admission.settle(s.outcome);
              if (taken?.probe !== undefined) taken.probe.settled = true;
            }
            const kinds = changes.map((c) => c.kind);
            kinds.forEach((kind, i) => expect(kind).toBe(i % 2 === 0 ? 'opened' : 'closed'));
            expect(breaker.state === 'closed').toBe(kinds.at(-1) !== 'opened');
          }
          for (const change of changes)
            if (change.kind === 'opened') expect(change.failures).toBe(failureThreshold);
        },
      ),
    );
  });
});

import { expect, describe, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import type { LockoutConfig } from '../../src/config/config-schema.js';
import { parseConfig } from '../../src/config/load-config.js';
import type {
  AttemptOutcome,
  LockStarted,
  Lockout,
  LockoutDecision,
  LockoutTarget,
} from '../../src/protection/lockout.js';

// One contract for every lockout: in process (memory backend), on a standalone Redis
// (lockout-contract.test.ts) and on a Redis Cluster (redis-cluster-backend.test.ts). All run on a
// real clock (Redis's TIME for the script), so the only waits are for one short lock to end.

/** Small thresholds, each counter its own, 60 s locks unless a test says otherwise. */
export function config(overrides: object = {}): LockoutConfig {
  return parseConfig(
    JSON.stringify({
      lockout: {
        initialLockSec: 60,
        windowSec: 600,
        basic: {
          address: { threshold: 6, maxLockSec: 600 },
          keyAddress: { threshold: 3, maxLockSec: 600 },
          key: { threshold: 5, maxLockSec: 600 },
        },
        token: {
          address: { threshold: 6, maxLockSec: 600 },
          usernameAddress: { threshold: 3, maxLockSec: 600 },
          username: { threshold: 5, maxLockSec: 600 },
        },
        ...overrides,
      },
    }),
    'lockout-contract.yaml',
  ).lockout;
}

export interface LockoutImplementation {
  readonly name: string;
  make(config: LockoutConfig): Lockout;
}

export const basic = (id: string, address: string): LockoutTarget => ({
  kind: 'basic',
  id,
  address,
  network: address,
});

/** Begins and settles one attempt; the decision, and the locks its settle started. */
export async function attempt(
  lockout: Lockout,
  target: LockoutTarget,
  outcome: AttemptOutcome,
): Promise<{ decision: LockoutDecision; locks: readonly LockStarted[] }> {
  const decision = await lockout.begin(target);
  const locks = decision.kind === 'allow' ? await decision.attempt.settle(outcome) : [];
  return { decision, locks };
}

export async function failTimes(lockout: Lockout, target: LockoutTarget, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    const { decision } = await attempt(lockout, target, 'failure');
    expect(decision.kind).toBe('allow');
  }
}

export function lockoutContract(impl: LockoutImplementation): void {
  describe(`lockout contract: ${impl.name}`, () => {
    it('locks a (key, address) at its threshold, reporting the lock, and refuses it for the whole lock', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_one', '10.0.0.1');
      await failTimes(lockout, target, 2);
      const third = await attempt(lockout, target, 'failure');
      expect(third.locks).toEqual([{ scope: 'basic_key_address', lockSec: 60, failures: 3 }]);
      const refused = await lockout.begin(target);
      expect(refused).toMatchObject({ kind: 'refuse', scope: 'basic_key_address' });
      expect(refused.kind === 'refuse' && [59, 60].includes(refused.retryAfterSec)).toBe(true);
      // The same key from another address, and another key from this one, still go ahead.
      expect((await lockout.begin(basic('ak_one', '10.0.0.2'))).kind).toBe('allow');
      expect((await lockout.begin(basic('ak_other', '10.0.0.1'))).kind).toBe('allow');
    });

    it('locks a key across addresses at its key-wide threshold, for every address', async () => {
      const lockout = impl.make(config());
      for (let i = 1; i <= 5; i += 1) await failTimes(lockout, basic('ak_wide', `10.0.1.${i}`), 1);
      expect(await lockout.begin(basic('ak_wide', '10.0.1.99'))).toMatchObject({
        kind: 'refuse',
        scope: 'basic_key',
      });
    });

    it('locks an address across keys at its address threshold, for every key', async () => {
      const lockout = impl.make(config());
      for (let i = 1; i <= 6; i += 1)
        await failTimes(lockout, basic(`ak_spray${i}`, '10.0.2.1'), 1);
      expect(await lockout.begin(basic('ak_fresh', '10.0.2.1'))).toMatchObject({
        kind: 'refuse',
        scope: 'basic_address',
      });
      expect(await lockout.checkAddress('basic', '10.0.2.1')).toMatchObject({
        kind: 'refuse',
        scope: 'basic_address',
      });
      expect(await lockout.checkAddress('basic', '10.0.2.2')).toBeUndefined();
    });

    it('counts password exchanges apart from Basic checks, under the token scopes', async () => {
      const lockout = impl.make(config());
      const target: LockoutTarget = {
        kind: 'token',
        id: 'alice',
        address: '10.0.3.1',
        network: '10.0.3.1',
      };
      await failTimes(lockout, target, 3);
      expect(await lockout.begin(target)).toMatchObject({
        kind: 'refuse',
        scope: 'token_username_address',
      });
      expect((await lockout.begin(basic('alice', '10.0.3.1'))).kind).toBe('allow');
    });

    it('clears the (key, address) count on a success, and keeps the address and key-wide counts', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_success', '10.0.4.1');
      await failTimes(lockout, target, 2);
      await attempt(lockout, target, 'success');
      // Two more failures would have locked the pair without the success in between.
      await failTimes(lockout, target, 2);
      expect((await attempt(lockout, target, 'error')).decision.kind).toBe('allow');
      // The key-wide count kept the first two: one more from anywhere reaches 5.
      await failTimes(lockout, basic('ak_success', '10.0.4.2'), 1);
      expect(await lockout.begin(basic('ak_success', '10.0.4.3'))).toMatchObject({
        kind: 'refuse',
        scope: 'basic_key',
      });
    });

    it('gives back an attempt that ended without a verdict', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_error', '10.0.5.1');
      for (let i = 0; i < 10; i += 1) await attempt(lockout, target, 'error');
      await failTimes(lockout, target, 2);
      expect((await lockout.begin(target)).kind).toBe('allow');
    });

    it('lets exactly the threshold of a parallel burst through, before any of them settles', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_burst', '10.0.6.1');
      const decisions = await Promise.all(Array.from({ length: 20 }, () => lockout.begin(target)));
      const allowed = decisions.filter((d) => d.kind === 'allow');
      expect(allowed).toHaveLength(3);
      for (const refused of decisions.filter((d) => d.kind === 'refuse'))
        expect(refused).toMatchObject({ scope: 'basic_key_address', retryAfterSec: 60 });
      // Settled as failures, they lock the pair; as no verdict, they would have freed it.
      const locks = await Promise.all(
        allowed.map((d) =>
          d.kind === 'allow' ? d.attempt.settle('failure') : Promise.resolve([]),
        ),
      );
      expect(locks.flat()).toEqual([{ scope: 'basic_key_address', lockSec: 60, failures: 3 }]);
    });

    it('says whether a refusal comes from a lock or only from attempts in flight', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_inflight', '10.0.9.1');
      await failTimes(lockout, target, 2);
      const running = await lockout.begin(target);
      expect(running.kind).toBe('allow');
      // Two failures and one attempt in flight reach the threshold of 3: refused, not locked.
      expect(await lockout.begin(target)).toMatchObject({
        kind: 'refuse',
        scope: 'basic_key_address',
        locked: false,
      });
      if (running.kind === 'allow') await running.attempt.settle('failure');
      expect(await lockout.begin(target)).toMatchObject({
        kind: 'refuse',
        scope: 'basic_key_address',
        locked: true,
      });
      // The address check reports the same way.
      for (let i = 1; i <= 6; i += 1)
        await failTimes(lockout, basic(`ak_flight${i}`, '10.0.9.2'), 1);
      expect(await lockout.checkAddress('basic', '10.0.9.2')).toMatchObject({ locked: true });
    });

    it('settles an attempt once, however often settle is called', async () => {
      const lockout = impl.make(config());
      const target = basic('ak_once', '10.0.7.1');
      const decision = await lockout.begin(target);
      if (decision.kind !== 'allow') throw new Error('expected the first attempt to go ahead');
      await decision.attempt.settle('failure');
      await decision.attempt.settle('failure');
      await decision.attempt.settle('failure');
      await failTimes(lockout, target, 1);
      expect((await lockout.begin(target)).kind).toBe('allow');
    });

    it('doubles the lock for a failure after a lock has ended', async () => {
      const lockout = impl.make(
        config({ initialLockSec: 1, basic: { keyAddress: { threshold: 1, maxLockSec: 600 } } }),
      );
      const target = basic('ak_backoff', '10.0.8.1');
      expect((await attempt(lockout, target, 'failure')).locks).toEqual([
        { scope: 'basic_key_address', lockSec: 1, failures: 1 },
      ]);
      expect((await lockout.begin(target)).kind).toBe('refuse');
      // No event marks a lock's end: wait it out (1 s, with room for the clocks' rounding).
      await delay(1_100);
      expect((await attempt(lockout, target, 'failure')).locks).toEqual([
        { scope: 'basic_key_address', lockSec: 2, failures: 2 },
      ]);
      expect(await lockout.begin(target)).toMatchObject({ kind: 'refuse', retryAfterSec: 2 });
    });
  });
}

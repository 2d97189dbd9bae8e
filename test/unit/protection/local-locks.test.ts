import { describe, expect, it } from 'vitest';
import { withLocalLocks } from '../../../src/protection/local-locks.js';
import type {
  Lockout,
  LockoutDecision,
  LockoutRefusal,
  LockoutTarget,
  Unlock,
} from '../../../src/protection/lockout.js';

const ALLOW: LockoutDecision = {
  kind: 'allow',
  attempt: { settle: () => Promise.resolve([]) },
};

/** A shared lockout that answers what it is told to, and counts its round trips. */
function sharedLockout() {
  let answer: LockoutDecision = ALLOW;
  const calls: string[] = [];
  const lockout: Lockout = {
    begin: (target) => {
      calls.push(`begin ${target.id}@${target.address}`);
      return Promise.resolve(answer);
    },
    checkAddress: (kind, address) => {
      calls.push(`check ${kind}@${address}`);
      return Promise.resolve(answer.kind === 'refuse' ? answer : undefined);
    },
  };
  return { lockout, calls, answer: (next: LockoutDecision) => (answer = next) };
}

const basic = (id: string, address: string): LockoutTarget => ({
  kind: 'basic',
  id,
  address,
  network: address,
});
const refuse = (
  scope: LockoutRefusal['scope'],
  retryAfterSec: number,
  locked = true,
): LockoutRefusal => ({ kind: 'refuse', scope, retryAfterSec, locked });

describe('withLocalLocks', () => {
  it("refuses a locked address's further attempts here until the lock ends, then asks again", async () => {
    const clock = { ms: 1_000_000 };
    const shared = sharedLockout();
    const lockout = withLocalLocks(shared.lockout, () => clock.ms);
    shared.answer(refuse('basic_address', 30));
    expect(await lockout.begin(basic('ak_one', '10.0.0.1'))).toEqual(refuse('basic_address', 30));
    shared.answer(ALLOW);
    clock.ms += 10_000;
    // Another key from the same address: the address's lock, with the time left.
    expect(await lockout.begin(basic('ak_two', '10.0.0.1'))).toEqual(refuse('basic_address', 20));
    expect(await lockout.checkAddress('basic', '10.0.0.1')).toEqual(refuse('basic_address', 20));
    // Another address is not locked: asked.
    expect((await lockout.begin(basic('ak_two', '10.0.0.2'))).kind).toBe('allow');
    clock.ms += 20_000;
    expect((await lockout.begin(basic('ak_two', '10.0.0.1'))).kind).toBe('allow');
    expect(shared.calls).toEqual([
      'begin ak_one@10.0.0.1',
      'begin ak_two@10.0.0.2',
      'begin ak_two@10.0.0.1',
    ]);
  });

  it('keeps a key-wide lock for that key from every address, and never remembers an allow', async () => {
    const clock = { ms: 0 };
    const shared = sharedLockout();
    const lockout = withLocalLocks(shared.lockout, () => clock.ms);
    await lockout.begin(basic('ak_free', '10.0.0.1'));
    await lockout.begin(basic('ak_free', '10.0.0.1'));
    shared.answer(refuse('basic_key', 5));
    await lockout.begin(basic('ak_hot', '10.0.0.1'));
    shared.answer(ALLOW);
    expect(await lockout.begin(basic('ak_hot', '10.0.0.9'))).toEqual(refuse('basic_key', 5));
    expect((await lockout.begin(basic('ak_cold', '10.0.0.9'))).kind).toBe('allow');
    expect(shared.calls).toHaveLength(4);
  });

  it('remembers what the address check refused, for the attempts that follow', async () => {
    const clock = { ms: 0 };
    const shared = sharedLockout();
    const lockout = withLocalLocks(shared.lockout, () => clock.ms);
    shared.answer(refuse('token_address', 7));
    expect(await lockout.checkAddress('token', '10.0.0.3')).toEqual(refuse('token_address', 7));
    shared.answer(ALLOW);
    expect(
      await lockout.begin({
        kind: 'token',
        id: 'alice',
        address: '10.0.0.3',
        network: '10.0.0.3',
      }),
    ).toEqual(refuse('token_address', 7));
    expect(shared.calls).toEqual(['check token@10.0.0.3']);
  });

  it('does not remember a refusal for attempts in flight: the next attempt asks again', async () => {
    const clock = { ms: 0 };
    const shared = sharedLockout();
    const lockout = withLocalLocks(shared.lockout, () => clock.ms);
    // Refused only because another attempt from the address is still running: its outcome
    // (a success, say) may free the counter at once, so the refusal must not outlive it.
    shared.answer(refuse('basic_address', 3600, false));
    expect(await lockout.begin(basic('ak_one', '10.0.0.4'))).toEqual(
      refuse('basic_address', 3600, false),
    );
    expect(await lockout.checkAddress('basic', '10.0.0.4')).toEqual(
      refuse('basic_address', 3600, false),
    );
    shared.answer(ALLOW);
    expect((await lockout.begin(basic('ak_two', '10.0.0.4'))).kind).toBe('allow');
    expect((await lockout.checkAddress('basic', '10.0.0.4')) === undefined).toBe(true);
    expect(shared.calls).toEqual([
      'begin ak_one@10.0.0.4',
      'check basic@10.0.0.4',
      'begin ak_two@10.0.0.4',
      'check basic@10.0.0.4',
    ]);
  });

  describe('forget (keys unlock)', () => {
    const token = (id: string, address: string): LockoutTarget => ({
      ...basic(id, address),
      kind: 'token',
    });
    type Held = readonly [LockoutTarget, LockoutRefusal['scope']];

    /** A local-locks lockout that remembers a lock of each `held`, its shared lockout allowing after. */
    async function holding(held: readonly Held[]) {
      const shared = sharedLockout();
      const lockout = withLocalLocks(shared.lockout, () => 0);
      for (const [target, scope] of held) {
        shared.answer(refuse(scope, 60));
        await lockout.begin(target);
      }
      shared.answer(ALLOW);
      /** Whether each target is still refused here, with no round trip. */
      const refusedHere = async () => {
        const refused = [];
        for (const [target] of held) {
          const before = shared.calls.length;
          const decision = await lockout.begin(target);
          refused.push(decision.kind === 'refuse' && shared.calls.length === before);
        }
        return refused;
      };
      return { lockout, refusedHere };
    }

    it.each<[string, readonly Held[], readonly Unlock[], readonly boolean[]]>([
      [
        "a key's locks from every network and its key-wide lock, and no other key's",
        [
          [basic('ak_a', '10.0.0.1'), 'basic_key_address'],
          [basic('ak_a', '2001:db8::/64'), 'basic_key_address'],
          [basic('ak_ab', '10.0.0.1'), 'basic_key_address'],
          [basic('ak_b', '10.0.0.2'), 'basic_key'],
        ],
        [
          { kind: 'key', key: 'ak_a' },
          { kind: 'key', key: 'ak_b' },
        ],
        [false, false, true, false],
      ],
      [
        "a username's locks, not a Basic key's of the same name",
        [
          [token('carol', '10.0.0.1'), 'token_username_address'],
          [token('carol', '10.0.0.3'), 'token_username'],
          [basic('carol', '10.0.0.1'), 'basic_key_address'],
        ],
        [{ kind: 'username', username: 'carol' }],
        [false, false, true],
      ],
      [
        "a network's Basic and token address locks, and no other network's",
        [
          [basic('ak_x', '2001:db8::/64'), 'basic_address'],
          [token('dave', '2001:db8::/64'), 'token_address'],
          [basic('ak_y', '2001:db8:0:1::/64'), 'basic_address'],
        ],
        [{ kind: 'address', network: '2001:db8::/64' }],
        [false, false, true],
      ],
    ])('forgets %s', async (_name, held, unlocks, stillRefused) => {
      const { lockout, refusedHere } = await holding(held);
      for (const unlock of unlocks) lockout.forget(unlock);
      expect(await refusedHere()).toEqual(stillRefused);
    });

    it('forgets every lock at once when an unlock may have been missed', async () => {
      const { lockout, refusedHere } = await holding([
        [basic('ak_a', '10.0.0.1'), 'basic_address'],
        [token('carol', '10.0.0.2'), 'token_username'],
      ]);
      lockout.forgetAll();
      expect(await refusedHere()).toEqual([false, false]);
    });
  });
});

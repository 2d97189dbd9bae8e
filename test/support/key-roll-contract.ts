import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  isUsable,
  type CredentialStore,
  type KeyRecord,
  type KeyRoll,
  type Revocation,
} from '../../src/credentials/credential-store.js';
import { ROLL_MESSAGES } from '../../src/credentials/key-roll.js';
import {
  clock,
  FUTURE,
  iso,
  keyRecord,
  OTHER_HASH,
  PAST,
  START_MS,
  type StoreUnderTest,
} from './credential-store-contract.js';

// rollKey as every CredentialStore does it (credentials/key-roll.ts), on the stores of
// credentialStoreContract: the memory store, a standalone Redis and a Redis Cluster.

const HOUR_MS = 3_600_000;
const AT = iso(START_MS);

/** A roll of `key` at the suite's clock into the successor `ak_next` (or `successor`). */
const roll = (key: string, overlapSec: number, successor = 'ak_next'): KeyRoll => ({
  key,
  successor: { key: successor, secretHash: OTHER_HASH },
  at: AT,
  overlapSec,
});

export function keyRollContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} credential store rolling a pair`, () => {
    let target: StoreUnderTest;
    let store: CredentialStore;

    beforeEach(async () => {
      clock.ms = START_MS;
      target = await makeStore();
      store = target.store;
    });

    afterEach(async () => {
      await target.close();
    });

    const heardNext = (): Promise<Revocation> =>
      new Promise((resolve) => {
        target.observer.subscribe(resolve, () => undefined);
      });

    it('makes a successor with the pair’s subject, label, scopes and expiry, and ends the pair after the overlap', async () => {
      const old = keyRecord('ak_old', 'alice', {
        label: 'ci runner',
        scopes: ['accounts:read', 'keys'],
        expiresAt: FUTURE,
      });
      await store.createKey(old, 10);

      const rolled = await store.rollKey(roll('ak_old', 3600), 10);

      const successor: KeyRecord = {
        key: 'ak_next',
        subject: 'alice',
        secretHash: OTHER_HASH,
        label: 'ci runner',
        status: 'active',
        createdAt: AT,
        expiresAt: FUTURE,
        scopes: ['accounts:read', 'keys'],
      };
      const ending: KeyRecord = { ...old, expiresAt: iso(START_MS + HOUR_MS) };
      expect(rolled).toEqual({ successor, rolled: ending });
      await expect(store.getKey('ak_next')).resolves.toEqual(successor);
      await expect(store.getKey('ak_old')).resolves.toEqual(ending);
      // Both work during the overlap; the pair rolled stops at its end, the successor goes on.
      await expect(store.countActiveKeys('alice')).resolves.toBe(2);
      clock.ms = START_MS + HOUR_MS;
      const after = await store.getKey('ak_old');
      expect(after !== undefined && isUsable(after, clock.ms)).toBe(false);
      await expect(store.countActiveKeys('alice')).resolves.toBe(1);
      expect((await store.listKeys('alice'))?.map((pair) => pair.key).sort()).toEqual([
        'ak_next',
        'ak_old',
      ]);
    });

    it('never moves the end past the pair’s own expiry, which the successor keeps', async () => {
      const soon = iso(START_MS + 60_000);
      await store.createKey(keyRecord('ak_soon', 'alice', { expiresAt: soon }), 10);

      const rolled = await store.rollKey(roll('ak_soon', 86_400), 10);

      expect(rolled?.rolled.expiresAt).toBe(soon);
      expect(rolled?.successor.expiresAt).toBe(soon);
      await expect(store.getKey('ak_soon')).resolves.toMatchObject({ expiresAt: soon });
      await expect(store.getKey('ak_next')).resolves.toMatchObject({ expiresAt: soon });
    });

    it('revokes the pair at once with no overlap, its verified record gone, and announces it', async () => {
      await store.createKey(keyRecord('ak_leaked', 'alice'), 10);
      await store.keepVerifiedRecord(
        'ak_leaked',
        keyRecord('ak_leaked', 'alice').secretHash,
        'v1.r',
      );
      const heard = heardNext();
      await target.subscribed();

      const rolled = await store.rollKey(roll('ak_leaked', 0), 10);

      const revoked = { ...keyRecord('ak_leaked', 'alice'), status: 'revoked', revokedAt: AT };
      expect(rolled?.rolled).toEqual(revoked);
      await expect(store.getKey('ak_leaked')).resolves.toEqual(revoked);
      await expect(heard).resolves.toEqual({ kind: 'key', key: 'ak_leaked' });
      await expect(store.countActiveKeys('alice')).resolves.toBe(1);
    });

    it('announces a roll with an overlap too, so that no gateway keeps the pair past its new end', async () => {
      await store.createKey(keyRecord('ak_cached', 'alice'), 10);
      const heard = heardNext();
      await target.subscribed();

      await store.rollKey(roll('ak_cached', 60), 10);

      await expect(heard).resolves.toEqual({ kind: 'key', key: 'ak_cached' });
    });

    it('keeps the verified record of a pair it ends later: the expiry read with it decides', async () => {
      const old = keyRecord('ak_proved', 'alice');
      await store.createKey(old, 10);
      await store.keepVerifiedRecord('ak_proved', old.secretHash, 'v1.kept');

      await store.rollKey(roll('ak_proved', 60), 10);

      const after = await store.getKey('ak_proved');
      expect(after).toMatchObject({ verifiedRecord: 'v1.kept', expiresAt: iso(START_MS + 60_000) });
      clock.ms = START_MS + 60_000;
      expect(after !== undefined && isUsable(after, clock.ms)).toBe(false);
    });

    it('refuses a revoked or an expired pair with conflict, making no successor', async () => {
      await store.createKey(keyRecord('ak_revoked', 'alice'), 10);
      await store.revokeKey('ak_revoked', AT);
      await store.createKey(keyRecord('ak_expired', 'alice', { expiresAt: PAST }), 10);

      for (const key of ['ak_revoked', 'ak_expired'])
        await expect(store.rollKey(roll(key, 60), 10)).rejects.toMatchObject({
          code: 'conflict',
          message: ROLL_MESSAGES.ended,
        });
      await expect(store.getKey('ak_next')).resolves.toBeUndefined();
      await expect(store.getKey('ak_expired')).resolves.toMatchObject({ expiresAt: PAST });
    });

    it('answers undefined for a pair it does not hold, making no successor', async () => {
      await expect(store.rollKey(roll('ak_unknown', 60), 10)).resolves.toBeUndefined();
      await expect(store.getKey('ak_next')).resolves.toBeUndefined();
    });

    it('lets a subject at its cap roll, not counting the pair rolled, but not roll again during the overlap', async () => {
      await store.createKey(keyRecord('ak_a', 'alice'), 2);
      await store.createKey(keyRecord('ak_b', 'alice'), 2);

      await expect(store.rollKey(roll('ak_a', 60, 'ak_a2'), 2)).resolves.toBeDefined();
      await expect(store.countActiveKeys('alice')).resolves.toBe(3);
      // Three usable pairs: two besides either one rolled now.
      for (const key of ['ak_b', 'ak_a', 'ak_a2'])
        await expect(store.rollKey(roll(key, 60, 'ak_x'), 2)).rejects.toMatchObject({
          code: 'limit_exceeded',
        });
      await expect(store.getKey('ak_x')).resolves.toBeUndefined();
      await expect(store.getKey('ak_b')).resolves.toEqual(keyRecord('ak_b', 'alice'));

      // Once ak_a has ended, ak_b may roll.
      clock.ms = START_MS + 60_000;
      await expect(
        store.rollKey({ ...roll('ak_b', 60, 'ak_b2'), at: iso(clock.ms) }, 2),
      ).resolves.toBeDefined();
      // The cap is per subject.
      await store.createKey(keyRecord('ak_bob', 'bob'), 1);
      await expect(store.rollKey(roll('ak_bob', 60, 'ak_bob2'), 1)).resolves.toBeDefined();
    });

    it('refuses a successor id that names a pair already, changing neither', async () => {
      const old = keyRecord('ak_old', 'alice');
      await store.createKey(old, 10);
      await store.createKey(keyRecord('ak_taken', 'alice'), 10);

      await expect(store.rollKey(roll('ak_old', 60, 'ak_taken'), 10)).rejects.toThrow(
        ROLL_MESSAGES.idTaken,
      );
      await expect(store.getKey('ak_old')).resolves.toEqual(old);
      await expect(store.getKey('ak_taken')).resolves.toEqual(keyRecord('ak_taken', 'alice'));
      await expect(store.listKeys('alice')).resolves.toHaveLength(2);
    });
  });
}

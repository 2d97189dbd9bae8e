import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  CredentialStore,
  PortalSession,
  SessionRef,
} from '../../src/credentials/credential-store.js';
import { subjectTag } from '../../src/identity/key-id.js';
import { newSessionId, sessionRefOf } from '../../src/portal/session-id.js';
import {
  HASH,
  OTHER_HASH,
  START_MS,
  userRecord,
  type StoreUnderTest,
} from './credential-store-contract.js';

// The portal's sessions, as every CredentialStore keeps them: run on the memory store and a
// standalone Redis (credential-store-contract.test.ts), whose scripts' keys are watched there.

const MINUTE_MS = 60_000;

/** A session of `username` (of `subject`) signed in at START_MS, ending in 30 minutes. */
export function portalSession(
  username: string,
  subject: string,
  overrides: Partial<PortalSession> = {},
): PortalSession {
  return {
    username,
    subject,
    createdAtMs: START_MS,
    lastSeenMs: START_MS,
    endsAtMs: START_MS + 30 * MINUTE_MS,
    ...overrides,
  };
}

/** A new session id's place in the store, for `username`. */
export function newRef(username: string): SessionRef {
  const ref = sessionRefOf(newSessionId(username));
  if (ref === undefined) throw new Error('a new session id must read');
  return ref;
}

export function sessionStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name} store's portal sessions`, () => {
    let target: StoreUnderTest;
    let store: CredentialStore;

    beforeEach(async () => {
      target = await makeStore();
      store = target.store;
      await store.addUser(userRecord('alice', 'alice-subject'));
      await store.addUser(userRecord('bob', 'bob-subject'));
    });

    afterEach(async () => {
      await target.close();
    });

    it('keeps a session of an existing user and gives it back by its place until it ends', async () => {
      const ref = newRef('alice');
      const session = portalSession('alice', 'alice-subject');
      expect(await store.createSession(ref, session)).toBe(true);
      expect(await store.getSession(ref, START_MS)).toEqual(session);
      expect(await store.getSession(ref, session.endsAtMs - 1)).toEqual(session);
      expect(await store.getSession(ref, session.endsAtMs)).toBeUndefined();
      expect(await store.getSession(newRef('alice'), START_MS)).toBeUndefined();
    });

    it('makes no session for a user that does not exist, or of another subject', async () => {
      const ghost = newRef('ghost');
      expect(await store.createSession(ghost, portalSession('ghost', 'ghost-subject'))).toBe(false);
      expect(await store.getSession(ghost, START_MS)).toBeUndefined();
      const wrong = newRef('alice');
      expect(await store.createSession(wrong, portalSession('alice', 'bob-subject'))).toBe(false);
      expect(await store.getSession(wrong, START_MS)).toBeUndefined();
    });

    it('replaces a session only while it is still the one expected, never bringing one back', async () => {
      const ref = newRef('alice');
      const session = portalSession('alice', 'alice-subject');
      await store.createSession(ref, session);
      const withNonce = { ...session, formNonce: 'nonce-1' };
      expect(await store.replaceSession(ref, session, withNonce)).toBe(true);
      expect(await store.getSession(ref, START_MS)).toEqual(withNonce);
      // The token spent once: a second spending of it expects what is no longer there.
      const spent = { ...withNonce, formNonce: undefined };
      expect(await store.replaceSession(ref, withNonce, spent)).toBe(true);
      expect(await store.replaceSession(ref, withNonce, spent)).toBe(false);
      await store.endSession(ref);
      expect(await store.replaceSession(ref, spent, withNonce)).toBe(false);
      expect(await store.getSession(ref, START_MS)).toBeUndefined();
    });

    it('lets exactly one of two concurrent replacements of a session win', async () => {
      const ref = newRef('alice');
      const session = portalSession('alice', 'alice-subject', { formNonce: 'once' });
      await store.createSession(ref, session);
      const outcomes = await Promise.all([
        store.replaceSession(ref, session, { ...session, formNonce: undefined }),
        store.replaceSession(ref, session, { ...session, formNonce: undefined }),
      ]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
    });

    it('ends one session on sign-out, leaving the user’s others', async () => {
      const first = newRef('alice');
      const second = newRef('alice');
      await store.createSession(first, portalSession('alice', 'alice-subject'));
      await store.createSession(second, portalSession('alice', 'alice-subject'));
      await store.endSession(first);
      await store.endSession(newRef('alice'));
      expect(await store.getSession(first, START_MS)).toBeUndefined();
      expect(await store.getSession(second, START_MS)).toBeDefined();
    });

    it("ends every session of a user whose password changes, and no other user's", async () => {
      const alice = [newRef('alice'), newRef('alice')];
      const bob = newRef('bob');
      for (const ref of alice)
        await store.createSession(ref, portalSession('alice', 'alice-subject'));
      await store.createSession(bob, portalSession('bob', 'bob-subject'));
      expect(await store.setUserPassword('alice', OTHER_HASH)).toBe(true);
      for (const ref of alice) expect(await store.getSession(ref, START_MS)).toBeUndefined();
      expect(await store.getSession(bob, START_MS)).toBeDefined();
    });

    it('ends every session of a removed user, a user of the same tag keeping its own', async () => {
      // Two usernames of one tag share the sessions' hash on Redis (found by trying names).
      const twin = 'twin594591';
      expect(subjectTag(twin)).toBe(subjectTag('alice'));
      expect(await store.addUser({ ...userRecord(twin, 'twin-subject'), passwordHash: HASH })).toBe(
        true,
      );
      const alice = newRef('alice');
      const other = newRef(twin);
      expect(other.tag).toBe(alice.tag);
      await store.createSession(alice, portalSession('alice', 'alice-subject'));
      await store.createSession(other, portalSession(twin, 'twin-subject'));
      expect(await store.removeUser('alice')).toBe(true);
      expect(await store.getSession(alice, START_MS)).toBeUndefined();
      expect(await store.getSession(other, START_MS)).toBeDefined();
    });
  });
}

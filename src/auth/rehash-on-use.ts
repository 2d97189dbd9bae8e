import type { CredentialStore, HashOwner } from '../credentials/credential-store.js';
import { readBcryptHash, type BcryptParameters } from '../credentials/secret-hasher.js';
import type { SecretVerifier } from './secret-verifier.js';

/**
 * `written`: the store holds the new hash. `superseded`: the hash had changed meanwhile (a
 * new password, another instance's rehash) and was left as it is. `failed`: the store did not
 * answer, or the bcrypt bound refused the work; the next success tries again.
 */
export type RehashOutcome = 'written' | 'superseded' | 'failed';

export interface RehashEvent {
  readonly owner: HashOwner;
  readonly outcome: RehashOutcome;
  /** The variant and cost the stored hash had. */
  readonly from: BcryptParameters | undefined;
  /** Why it failed. */
  readonly error?: unknown;
}

export interface RehashOnUseOptions {
  store: CredentialStore;
  /** Says which hashes are current, and makes new ones within the bcrypt bound. */
  verifier: SecretVerifier;
  /** Told of every rehash once it has ended (metrics, logs). */
  onRehash: (event: RehashEvent) => void;
}

export interface RehashOnUse {
  /**
   * Called once `secret` has matched `hash`, the stored hash of `owner`. When that hash is
   * not current (another cost or variant than the gateway writes), starts rewriting it and
   * returns at once: the response never waits for the write, and a failure is reported, not
   * thrown. At most one rewrite per credential is under way in this process.
   */
  afterSuccess(owner: HashOwner, secret: string, hash: string): void;
}

/**
 * Rehash-on-use: the secret is known only at a successful check, so that is when a stored
 * hash can be brought to the configured cost. Mixed costs leak existence (a wrong secret for
 * a known key costs its hash's time, an unknown key the dummy's); once a credential has been
 * used, its hash costs what the dummy does. The new hash is written with a compare-and-set
 * on the old one, so a password changed meanwhile is never overwritten with the old one.
 * Neither the secret nor the identity changes, so nothing cached is dropped.
 */
export function createRehashOnUse(options: RehashOnUseOptions): RehashOnUse {
  const { store, verifier, onRehash } = options;
  const underWay = new Set<string>();
  const rehash = async (owner: HashOwner, secret: string, hash: string) => {
    const next = await verifier.hash(secret);
    return (await store.replaceHash(owner, hash, next)) ? 'written' : 'superseded';
  };
  return {
    afterSuccess(owner, secret, hash) {
      if (verifier.isCurrent(hash)) return;
      const id = owner.kind === 'key' ? `key:${owner.key}` : `user:${owner.username}`;
      if (underWay.has(id)) return;
      underWay.add(id);
      const from = readBcryptHash(hash);
      void rehash(owner, secret, hash).then(
        (outcome) => {
          underWay.delete(id);
          onRehash({ owner, outcome, from });
        },
        (error: unknown) => {
          underWay.delete(id);
          onRehash({ owner, outcome: 'failed', from, error });
        },
      );
    },
  };
}

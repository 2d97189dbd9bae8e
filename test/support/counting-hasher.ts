import type { SecretHasher } from '../../src/credentials/secret-hasher.js';

export interface Compare {
  readonly secret: string;
  readonly hash: string;
}

/** A real hasher that counts its work and can hold compares: what tests cannot see outside. */
export interface CountingHasher extends SecretHasher {
  /** Every compare so far, in the order they started. */
  compares(): readonly Compare[];
  /** How many hashes were made. */
  hashes(): number;
  /** Holds every compare that has not finished until the returned function is called. */
  hold(): () => void;
  /** The same for hashes being made (a rehash under way). */
  holdHashes(): () => void;
}

/** A gate to hold work at: `wait` resolves once `release` has been called. */
function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { wait, release };
}

/** `onCompare` sees the compares so far each time one starts (before any hold). */
export function countingHasher(
  base: SecretHasher,
  onCompare: (seen: readonly Compare[]) => void = () => undefined,
): CountingHasher {
  const seen: Compare[] = [];
  let hashes = 0;
  let compareGate: Promise<void> | undefined;
  let hashGate: Promise<void> | undefined;
  return {
    async hash(secret) {
      hashes += 1;
      if (hashGate !== undefined) await hashGate;
      return base.hash(secret);
    },
    async verify(secret, hash) {
      seen.push({ secret, hash });
      onCompare(seen);
      if (compareGate !== undefined) await compareGate;
      return base.verify(secret, hash);
    },
    compares: () => seen,
    hashes: () => hashes,
    hold() {
      const { wait, release } = gate();
      compareGate = wait;
      return () => {
        compareGate = undefined;
        release();
      };
    },
    holdHashes() {
      const { wait, release } = gate();
      hashGate = wait;
      return () => {
        hashGate = undefined;
        release();
      };
    },
  };
}

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
}

/** `onCompare` sees the compares so far each time one starts (before any hold). */
export function countingHasher(
  base: SecretHasher,
  onCompare: (seen: readonly Compare[]) => void = () => undefined,
): CountingHasher {
  const seen: Compare[] = [];
  let hashes = 0;
  let gate: Promise<void> | undefined;
  return {
    hash(secret) {
      hashes += 1;
      return base.hash(secret);
    },
    async verify(secret, hash) {
      seen.push({ secret, hash });
      onCompare(seen);
      if (gate !== undefined) await gate;
      return base.verify(secret, hash);
    },
    compares: () => seen,
    hashes: () => hashes,
    hold() {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

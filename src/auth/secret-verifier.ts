import { createWorkLimiter, WorkRefusedError } from '../concurrency/work-limiter.js';
import { readBcryptHash, type SecretHasher } from '../credentials/secret-hasher.js';
import { GatewayError } from '../errors/gateway-error.js';

export interface SecretVerifierOptions {
  hasher: SecretHasher;
  /**
   * A hash of a random secret made by `hasher`, compared when there is no real hash. Its cost
   * is the configured one: what an unknown key costs, and what every stored hash is brought
   * to. (Unreadable, as in tests that never compare: no hash is padded or rehashed.)
   */
  dummyHash: string;
  maxConcurrentHashes: number;
  maxQueuedHashes: number;
  /** A bcrypt run refused because the queue was full (the caller answers 503 `overloaded`). */
  onRefused?: () => void;
}

/** The bcrypt work of a verifier now: runs under way, and runs waiting for a thread. */
export interface BcryptWork {
  readonly running: number;
  readonly queued: number;
}

export interface SecretVerifier {
  /**
   * Compares against `hash`, or against the dummy hash when there is none, so an unknown
   * key or user costs the same time as a wrong secret. A hash cheaper than the dummy (or one
   * bcrypt would not run) is compared beside the dummy hash, so it costs no less either.
   * False for no hash, whatever the input.
   */
  verify(secret: string, hash: string | undefined): Promise<boolean>;
  hash(secret: string): Promise<string>;
  /** True for a hash as hash() writes it now: `$2b$` at the configured cost. */
  isCurrent(hash: string): boolean;
  /** Read when metrics are scraped (gateway_bcrypt_in_flight, gateway_bcrypt_queued). */
  work(): BcryptWork;
}

/**
 * bcrypt runs on libuv's small thread pool: bounding it keeps a flood of wrong secrets from
 * queueing without end; past the bound callers get 503 `overloaded` at once.
 */
export function createSecretVerifier(options: SecretVerifierOptions): SecretVerifier {
  const { hasher, dummyHash } = options;
  const configuredCost = readBcryptHash(dummyHash)?.cost ?? 0;
  const limiter = createWorkLimiter(options.maxConcurrentHashes, options.maxQueuedHashes);
  const bounded = async <T>(task: () => Promise<T>): Promise<T> => {
    try {
      return await limiter.run(task);
    } catch (error) {
      if (error instanceof WorkRefusedError) {
        options.onRefused?.();
        throw new GatewayError('overloaded', { cause: error, retryAfterSec: 1 });
      }
      throw error;
    }
  };
  const compare = (secret: string, hash: string) => bounded(() => hasher.verify(secret, hash));
  return {
    async verify(secret, hash) {
      if (hash === undefined) {
        await compare(secret, dummyHash);
        return false;
      }
      const cost = readBcryptHash(hash)?.cost;
      if (cost !== undefined && cost >= configuredCost) return compare(secret, hash);
      // An unknown key costs one compare at the configured cost. A stored hash of a lower
      // cost (another writer's, or made before the cost was raised) would answer a wrong
      // secret in a fraction of that, and so tell a known key from an unknown one; a hash
      // bcrypt does not run at all would answer at once. Compared side by side with the dummy
      // hash, it takes what the dummy takes, until its first success rehashes it
      // (rehash-on-use). A hash above the configured cost cannot be made cheaper before then.
      const [matches] = await Promise.all([compare(secret, hash), compare(secret, dummyHash)]);
      return matches;
    },
    hash: (secret) => bounded(() => hasher.hash(secret)),
    isCurrent(hash) {
      const read = readBcryptHash(hash);
      return configuredCost === 0 || (read?.variant === '2b' && read.cost === configuredCost);
    },
    work: () => ({ running: limiter.running, queued: limiter.queued }),
  };
}

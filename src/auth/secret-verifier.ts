import { createWorkLimiter, WorkRefusedError } from '../concurrency/work-limiter.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';
import { GatewayError } from '../errors/gateway-error.js';

export interface SecretVerifierOptions {
  hasher: SecretHasher;
  /** A hash of a random secret at the store's cost, compared when there is no real hash. */
  dummyHash: string;
  maxConcurrentHashes: number;
  maxQueuedHashes: number;
}

export interface SecretVerifier {
  /**
   * Compares against `hash`, or against the dummy hash when there is none, so an unknown
   * key or user costs the same time as a wrong secret. False for no hash, whatever the input.
   */
  verify(secret: string, hash: string | undefined): Promise<boolean>;
  hash(secret: string): Promise<string>;
}

/**
 * bcrypt runs on libuv's small thread pool: bounding it keeps a flood of wrong secrets from
 * queueing without end; past the bound callers get 503 `overloaded` at once.
 */
export function createSecretVerifier(options: SecretVerifierOptions): SecretVerifier {
  const limiter = createWorkLimiter(options.maxConcurrentHashes, options.maxQueuedHashes);
  const bounded = async <T>(task: () => Promise<T>): Promise<T> => {
    try {
      return await limiter.run(task);
    } catch (error) {
      if (error instanceof WorkRefusedError)
        throw new GatewayError('overloaded', { cause: error, retryAfterSec: 1 });
      throw error;
    }
  };
  return {
    async verify(secret, hash) {
      const matches = await bounded(() => options.hasher.verify(secret, hash ?? options.dummyHash));
      return hash !== undefined && matches;
    },
    hash: (secret) => bounded(() => options.hasher.hash(secret)),
  };
}

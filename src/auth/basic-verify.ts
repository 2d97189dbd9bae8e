import { createSingleFlight } from '../concurrency/single-flight.js';
import { MAX_SECRET_BYTES } from '../credentials/secret-hasher.js';
import { MAX_KEY_CHARS, parseKeyId } from '../identity/key-id.js';
import type { ClientAddress, ClientAddressSource } from '../identity/client-address.js';
import { guardAttempt } from '../protection/guard-attempt.js';
import {
  checkPair,
  judge,
  recordThenGuard,
  type LockoutGuard,
  type PairAttempt,
  type PairCheckContext,
} from './basic-pair-check.js';
import { DENIED, type AuthOutcome } from './denial.js';
import { orSuspect } from './verified-pairs.js';

/** A caller that gave no client address (tests, the CLI): counted under the empty one. */
const NO_ADDRESS: ClientAddress = { address: '', network: '' };

/** The full check of BasicAuthenticator.verify. */
export type VerifyPair = (
  key: string,
  secret: string,
  encoded?: string,
  from?: ClientAddressSource,
) => Promise<AuthOutcome>;

/** A pair no stored pair can match: empty, over the bounds, or a malformed key id. */
function isUnusablePair(key: string, secret: string): boolean {
  return (
    secret === '' ||
    key === '' ||
    Buffer.byteLength(secret) > MAX_SECRET_BYTES ||
    key.length > MAX_KEY_CHARS ||
    parseKeyId(key).kind === 'malformed'
  );
}

/**
 * The check of a pair the cache did not hold: identical checks merged, counted by the
 * lockout when there is one, answered from the suspects when the store cannot answer.
 */
export function createPairVerify(
  context: PairCheckContext,
  guard: LockoutGuard | undefined,
): VerifyPair {
  const singleFlight = createSingleFlight<AuthOutcome>();
  const guardedFlight = createSingleFlight<AuthOutcome>();
  const { pairs } = context;
  return (key, secret, encoded = Buffer.from(`${key}:${secret}`).toString('base64'), from) => {
    if (isUnusablePair(key, secret)) {
      // Refused without a compare, so not counted: logged only. A malformed id (the new form's
      // length and prefix, its checksum failing) pays no dummy compare either: the gateway never
      // makes one and docs/redis-layout.md bars other writers from it, the checksum is public, so
      // its quick answer tells a caller nothing it could not compute, and a flood of forged ids
      // costs neither a store read nor bcrypt.
      const client = from?.clientAddress() ?? NO_ADDRESS;
      guard?.events.failed({ kind: 'basic', id: key, ...client }, 'unusable_credentials');
      return Promise.resolve(DENIED.invalid_credentials);
    }
    const attempt: PairAttempt = {
      key,
      secret,
      id: pairs.cacheKey(encoded),
      readAt: pairs.generation,
    };
    const { id, readAt } = attempt;
    // Keyed by generation too: a request arriving after an eviction starts its own check,
    // which reads the store again, instead of joining one that read it before.
    const run = () => singleFlight.run(`${readAt}:${id}`, () => checkPair(context, attempt));
    if (guard === undefined) return orSuspect(pairs, id, run(), context.lastUse);
    // Checked and counted per client network before it may join a check. Callers sending
    // the same pair from the same network at once share one attempt: it is one guess, and a
    // busy client whose cached pair has just expired must not spend its (key, address)
    // threshold on its own parallel connections.
    const client = from?.clientAddress() ?? NO_ADDRESS;
    const target = { kind: 'basic', id: key, ...client } as const;
    const guarded =
      context.records?.mayProve(secret) === true
        ? () => recordThenGuard(context, guard, target, attempt, singleFlight)
        : () => guardAttempt(guard.lockout, guard.events, target, run, judge);
    const outcome = guardedFlight.run(`${readAt}:${id}:${client.network}`, guarded);
    return orSuspect(pairs, id, outcome, context.lastUse);
  };
}

import type { SingleFlight } from '../concurrency/single-flight.js';
import { isUsable, type CredentialStore, type KeyRecord } from '../credentials/credential-store.js';
import type { LastUseRecorder } from '../credentials/last-use-recorder.js';
import type { Identity } from '../identity/identity.js';
import { NO_SCOPES } from '../identity/scopes.js';
import { guardAttempt, type LockoutEvents } from '../protection/guard-attempt.js';
import type { Lockout, LockoutTarget } from '../protection/lockout.js';
import { DENIED, isDenial, type AuthOutcome } from './denial.js';
import type { RehashOnUse } from './rehash-on-use.js';
import type { SecretVerifier } from './secret-verifier.js';
import type { VerifiedPairs } from './verified-pairs.js';
import type { VerifiedRecords } from './verified-records.js';

/** What a Basic check reads and tells, fixed per authenticator. */
export interface PairCheckContext {
  readonly store: CredentialStore;
  readonly verifier: SecretVerifier;
  readonly records: VerifiedRecords | undefined;
  readonly lastUse: LastUseRecorder | undefined;
  readonly rehash: RehashOnUse | undefined;
  readonly now: () => number;
  readonly pairs: VerifiedPairs;
  readonly caching: boolean;
}

/** Failed checks per address, per (key, address) and per key, and what they tell. */
export interface LockoutGuard {
  readonly lockout: Lockout;
  readonly events: LockoutEvents;
}

/** One check of a pair: `id` its cache id, `readAt` the eviction generation it started in. */
export interface PairAttempt {
  readonly key: string;
  readonly secret: string;
  readonly id: string;
  readonly readAt: number;
}

/** How the lockout counts a check's outcome. */
export const judge = (outcome: AuthOutcome) =>
  isDenial(outcome) ? 'invalid_credentials' : 'success';

/** The pair proved by its verified record, or undefined: then bcrypt decides. */
async function byRecord(
  context: PairCheckContext,
  pair: KeyRecord | undefined,
  attempt: PairAttempt,
): Promise<Identity | undefined> {
  return pair !== undefined &&
    isUsable(pair, context.now()) &&
    (await context.records?.proves(pair, attempt.secret)) === true
    ? accepted(context, pair, attempt)
    : undefined;
}

/** bcrypt's verdict on the pair as read (undefined: unknown). */
async function byBcrypt(
  context: PairCheckContext,
  pair: KeyRecord | undefined,
  attempt: PairAttempt,
): Promise<AuthOutcome> {
  const { now } = context;
  const { secret } = attempt;
  // An unknown, revoked or expired key still pays one compare against the dummy hash, so
  // neither the answer nor its timing tells them apart.
  const usable = pair !== undefined && isUsable(pair, now());
  const matches = await context.verifier.verify(secret, usable ? pair.secretHash : undefined);
  // Checked again after bcrypt's tens of milliseconds: the pair may have expired meanwhile.
  if (!matches || pair === undefined || !isUsable(pair, now())) return DENIED.invalid_credentials;
  context.records?.afterBcrypt(pair, secret);
  return accepted(context, pair, attempt);
}

/**
 * The pair read with its verified record (the same round trip): one HMAC instead of bcrypt
 * when the record proves it. A wrong secret never matches a record and goes on to bcrypt.
 */
export async function checkPair(
  context: PairCheckContext,
  attempt: PairAttempt,
): Promise<AuthOutcome> {
  const pair = await context.store.getKey(attempt.key);
  return (await byRecord(context, pair, attempt)) ?? byBcrypt(context, pair, attempt);
}

/**
 * A secret of a form a record may prove, under the lockout: the pair is read first, and a
 * success its record proves is known without a compare, like a cache hit, so the lockout is
 * not asked (a cached pair skips it the same way; a reservation bounds guesses whose verdict
 * is still to come, and counting these would refuse a fleet's own parallel clients, 64 cold
 * connections from one network after a restart, as guesses in flight). Anything else is an
 * attempt like every other: reserved (a locked target refused) before bcrypt, then counted.
 */
export async function recordThenGuard(
  context: PairCheckContext,
  guard: LockoutGuard,
  target: LockoutTarget,
  attempt: PairAttempt,
  singleFlight: SingleFlight<AuthOutcome>,
): Promise<AuthOutcome> {
  const pair = await context.store.getKey(attempt.key);
  const proved = await byRecord(context, pair, attempt);
  if (proved !== undefined) return proved;
  const compare = () =>
    singleFlight.run(`${attempt.readAt}:${attempt.id}`, () => byBcrypt(context, pair, attempt));
  return guardAttempt(guard.lockout, guard.events, target, compare, judge);
}

/** A pair proved (by bcrypt or its record): cached unless an eviction came meanwhile. */
function accepted(context: PairCheckContext, record: KeyRecord, attempt: PairAttempt): Identity {
  const { key } = record;
  const identity: Identity = {
    subject: record.subject,
    method: 'basic',
    key,
    scopes: record.scopes.length === 0 ? NO_SCOPES : record.scopes,
  };
  // The entry ends with the pair: min(cache TTL, expiry - now).
  const endsAt = record.expiresAt === undefined ? undefined : Date.parse(record.expiresAt);
  const { pairs } = context;
  if (context.caching && attempt.readAt === pairs.generation)
    pairs.cache.set(attempt.id, identity, endsAt);
  context.lastUse?.touch(key);
  context.rehash?.afterSuccess({ kind: 'key', key }, attempt.secret, record.secretHash);
  return identity;
}

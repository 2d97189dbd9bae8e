import type { ExpiringCount } from './expiring-pairs.js';

export type KeyStatus = 'active' | 'revoked';

export type KeyOrder = 'desc' | 'asc';

/** Which part of a subject's pairs one listing reads (`GET /keys?limit&order&last_id`). */
export interface KeyPage {
  /** At most this many pairs: 1 to MAX_KEYS_PAGE. */
  readonly limit: number;
  readonly order: KeyOrder;
  /** The id of the last pair of the previous page; absent: from the first pair. */
  readonly after?: string | undefined;
}

/** The largest page, and the page a listing reads when none is given. */
export const MAX_KEYS_PAGE = 1000;
export const FIRST_PAGE: KeyPage = { limit: MAX_KEYS_PAGE, order: 'desc' };

/**
 * How long a pair that has ended (revoked, or expired) is kept, so its holder still sees it
 * in GET /keys: then the store deletes it. The default of `keys.retainEndedDays`.
 */
export const DEFAULT_RETAIN_ENDED_SEC = 30 * 86_400;

/** What a store keeps of ended pairs. */
export interface RetentionOptions {
  /** Seconds an ended pair is kept after its end (0: deleted once it has ended). */
  readonly retainEndedSec: number;
}

/** A key/secret pair as stored: the secret itself is never kept, only its bcrypt hash. */
export interface KeyRecord {
  readonly key: string;
  readonly subject: string;
  readonly secretHash: string;
  readonly label: string;
  readonly status: KeyStatus;
  readonly createdAt: string;
  readonly revokedAt?: string | undefined;
  /**
   * When the pair stops working (ISO 8601 UTC, as `toISOString()` writes it); none: never.
   * From that instant it answers exactly like a revoked pair, and no longer counts as active.
   */
  readonly expiresAt?: string | undefined;
  /** What the pair may do (RFC 6749 §3.3 scope tokens); empty: no scope. */
  readonly scopes: readonly string[];
  /** When a gateway last let the pair in (ISO 8601 UTC), written in batches; none: never. */
  readonly lastUsedAt?: string | undefined;
  /**
   * The entropy of the secret in bits, as the writer of the pair vouches for it
   * (`secret_bits`); none: unknown. At 128 or more the pair may get a verified record.
   */
  readonly secretBits?: number | undefined;
  /** The pair's verified record as stored (credentials/verified-record.ts); none: no record. */
  readonly verifiedRecord?: string | undefined;
}

/**
 * A pair as a listing reads it: everything but what only a check of its secret needs (its
 * hash, its verified record), so a store need not even read those for one.
 */
export type KeySummary = Omit<KeyRecord, 'secretHash' | 'secretBits' | 'verifiedRecord'>;

export interface UserRecord {
  readonly username: string;
  readonly subject: string;
  readonly passwordHash: string;
  readonly createdAt: string;
  /** What the user's tokens may do: issued in their `scope` claim. */
  readonly scopes: readonly string[];
  /**
   * Bumped by every password change (absent: 0). A token carries the generation it was issued
   * at, and is refused once the user's has moved on: a token must not outlive the password it
   * was issued for.
   */
  readonly tokenGeneration?: number;
}

/** What rollKey does to one pair (credentials/key-roll.ts). */
export interface KeyRoll {
  /** The pair rolled: it must be usable (active, unexpired). */
  readonly key: string;
  /** The successor's id (made for the rolled pair's subject) and its secret's bcrypt hash. */
  readonly successor: { readonly key: string; readonly secretHash: string };
  /** When the roll happens (ISO 8601 UTC): the successor's created_at, the overlap's start. */
  readonly at: string;
  /** Seconds the rolled pair keeps working: 0 (revoked at once) to MAX_ROLL_OVERLAP_SEC. */
  readonly overlapSec: number;
}

/** What a roll made: the successor, and the rolled pair as the roll left it (its end). */
export interface RolledPair {
  readonly successor: KeyRecord;
  readonly rolled: KeyRecord;
}

/**
 * A signed-in web-app user's session of the portal, as a store keeps it: never the session id
 * itself (only its SHA-256, in `SessionRef`), so a copy of the store signs nobody in.
 */
export interface PortalSession {
  readonly username: string;
  readonly subject: string;
  /** When it was made (sign-in), ms since the epoch: the absolute lifetime counts from here. */
  readonly createdAtMs: number;
  /** When it was last seen: the idle lifetime counts from here. */
  readonly lastSeenMs: number;
  /** When it ends unless seen again: the earlier of the two lifetimes' ends. */
  readonly endsAtMs: number;
  /** The one-use token of the create form last opened; none: no such form is open. */
  readonly formNonce?: string | undefined;
}

/**
 * Where a session is kept: the shard tag its id carries (its user's, identity/key-id.ts's
 * subjectTag of the username, so that it shares a Redis Cluster slot with the user's hash) and
 * the SHA-256 of the id (hex).
 */
export interface SessionRef {
  readonly tag: string;
  readonly idHash: string;
}

/** Whose bcrypt hash: a pair's secret hash, or a web-app user's password hash. */
export type HashOwner =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'user'; readonly username: string };

/** What a revocation event names: one pair, or every credential of a subject. */
export type Revocation =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'subject'; readonly subject: string };

/** A revocation subscription standing for the first time, or again after it was lost. */
export type SubscriptionStart = 'first' | 'again';

/**
 * Whether the store can answer, as its connection tells (not as a request finds out): what
 * `gateway_ready` shows at every scrape.
 */
export interface StoreHealth {
  ready(): boolean;
  /** Called with the new value at every change of ready(). */
  onChange(listener: (ready: boolean) => void): void;
  /** Resolves once the first attempt to reach the store has an outcome (or a few seconds passed). */
  readonly settled: Promise<void>;
}

/** The health of a store inside this process: always ready. */
export const IN_PROCESS_HEALTH: StoreHealth = {
  ready: () => true,
  onChange: () => undefined,
  settled: Promise.resolve(),
};

/**
 * Where credentials live. Implementations throw a GatewayError with code
 * `credential_store_unavailable` when they cannot answer: "unknown" and "cannot tell" must
 * never be confused, or an outage would turn into 401s (or worse, passes).
 */
export interface CredentialStore {
  getKey(key: string): Promise<KeyRecord | undefined>;
  /**
   * One page of the subject's pairs in `page.order` (see newestFirst and oldestFirst): the
   * first `page.limit` after the pair `page.after`, or from the start. Undefined when
   * `page.after` is not a listed pair of the subject (unknown, another subject's, or gone
   * since). Pairs ended more than the retention ago are never listed.
   */
  listKeys(subject: string, page?: KeyPage): Promise<KeySummary[] | undefined>;
  /**
   * Adds a pair unless the subject already has `maxActive` usable (active, unexpired) pairs;
   * false when capped. Expired pairs leave the active set here, atomically with the check.
   */
  createKey(record: KeyRecord, maxActive: number): Promise<boolean>;
  /**
   * How many usable (active, unexpired) pairs the subject has: a cheap look before paying for bcrypt. The cap
   * itself is enforced by createKey, atomically.
   */
  countActiveKeys(subject: string): Promise<number>;
  /**
   * Marks a pair revoked and announces it to every gateway; undefined when unknown. With
   * `keepLastActive`, refuses (GatewayError `conflict`) to revoke a subject's last usable
   * pair (expired ones do not count), checked atomically with the revocation.
   */
  revokeKey(
    key: string,
    at: string,
    options?: { keepLastActive?: boolean },
  ): Promise<KeyRecord | undefined>;
  /**
   * Rolls the usable pair `roll.key` (credentials/key-roll.ts), atomically: adds its
   * successor, with the rolled pair's subject, label, scopes and expiry as stored, and ends
   * the rolled pair `roll.overlapSec` after `roll.at` but never later than its own expiry:
   * revoked at once with an overlap of 0, else its expiry brought forward. Either way the
   * change is announced like a revocation of the pair, so that every gateway drops what it
   * cached of the pair under its former end. Undefined when the pair is unknown (or past its
   * retention); GatewayError `conflict` when it is revoked or expired; `limit_exceeded` when
   * the subject's other usable pairs number `maxActive` already. The rolled pair, ending, is
   * not counted: a subject at its cap can roll, and holds maxActive + 1 pairs during the
   * overlap (a second roll then waits for the first's end).
   */
  rollKey(roll: KeyRoll, maxActive: number): Promise<RolledPair | undefined>;
  /**
   * Revokes every usable pair of the subject at `at`, announcing each one (as revokeKey
   * does), and returns their ids. Atomic per call; a pair made meanwhile by a request already
   * past authentication can follow it, so callers check countActiveKeys afterwards.
   */
  revokeSubjectKeys(subject: string, at: string): Promise<string[]>;
  /**
   * Every usable pair of every subject whose expiry comes after now and by `untilMs`, in no
   * order: a walk over the whole store (on Redis, a SCAN of each master), for `keys list
   * --expiring` and countExpiring, never for a request. A pair changed during the walk may be
   * read as it was before or after. Pairs still in a single-slot layout are not read.
   */
  expiringPairs(untilMs: number): AsyncIterable<KeySummary>;
  /**
   * How many usable pairs of every subject end within each of EXPIRING_WINDOWS
   * (expiring-pairs.ts): the latest count of the store. Counted here (expiringPairs) when the
   * latest is `maxAgeMs` old or more and no other gateway on the same store is counting, so a
   * fleet pays for one count per `maxAgeMs`; else the latest one, however old (another
   * gateway's, while it counts). Undefined when there is none yet.
   */
  countExpiring(maxAgeMs: number): Promise<ExpiringCount | undefined>;
  /**
   * Records when pairs were last used (key id -> ISO 8601 UTC time), in one batch: never
   * recreates a pair deleted meanwhile, and never moves a pair's time backwards.
   */
  recordLastUse(uses: ReadonlyMap<string, string>): Promise<void>;
  getUser(username: string): Promise<UserRecord | undefined>;
  /** Adds a user; false (and nothing written) when the username is taken. Atomic. */
  addUser(record: UserRecord): Promise<boolean>;
  /**
   * Replaces the password hash of an existing user and bumps its token generation, announcing
   * that the subject's cached credentials must go (its tokens issued so far stop working), and
   * ends every portal session of the user; false when there is none. Atomic, so a user removed
   * meanwhile is not brought back and no session outlives the password it signed in with.
   */
  setUserPassword(username: string, passwordHash: string): Promise<boolean>;
  /**
   * Replaces the hash of a pair's secret or a user's password with `next`, only while it is
   * still `expected` (compare-and-set, atomic): a change made meanwhile (a new password,
   * another instance's rehash) is never overwritten. False, with nothing written, when the
   * hash differs or the pair or user does not exist (never recreated). Nothing is announced:
   * the secret is the same, so cached pairs stay valid.
   */
  replaceHash(owner: HashOwner, expected: string, next: string): Promise<boolean>;
  /**
   * Removes a user and announces that the subject's cached credentials must go. Every portal
   * session of the user ends with it, atomically (as with setUserPassword).
   */
  removeUser(username: string): Promise<boolean>;
  /**
   * Keeps a new portal session at `ref`, only while its user exists with the session's subject
   * (checked atomically with the write): false, with nothing written, otherwise. Sessions of
   * the same tag that have ended are dropped on the way.
   */
  createSession(ref: SessionRef, session: PortalSession): Promise<boolean>;
  /** The session at `ref`; undefined when there is none, or it has ended at `nowMs`. */
  getSession(ref: SessionRef, nowMs: number): Promise<PortalSession | undefined>;
  /**
   * Replaces the session at `ref` with `next`, only while it is still `expected`
   * (compare-and-set, atomic): false, with nothing written, when it changed, ended or is gone
   * (a session ended meanwhile is never brought back).
   */
  replaceSession(ref: SessionRef, expected: PortalSession, next: PortalSession): Promise<boolean>;
  /** Ends the session at `ref` (sign-out); nothing when there is none. */
  endSession(ref: SessionRef): Promise<void>;
  /**
   * The fleet key's text (credentials/verified-record.ts): made and kept by the store the first
   * time any gateway asks, so that every gateway on the same store shares it without setup.
   */
  fleetKey(): Promise<string>;
  /**
   * Keeps `record` as the pair's verified record, only while the pair is active and its hash
   * is still `secretHash` (compare-and-set, atomic): false, with nothing written, otherwise.
   * Revoking a pair deletes its record.
   */
  keepVerifiedRecord(key: string, secretHash: string, record: string): Promise<boolean>;
  /** Resolves when the store answers; throws when it does not. */
  ping(): Promise<void>;
  readonly health: StoreHealth;
  /**
   * Calls `listener` for every revocation announced by any gateway or writer, with the time
   * it was published (Unix ms) when the announcement carries one. Calls `flush` each time the
   * subscription stands (`first`, then `again` after each loss), once: revocations announced
   * while none stood are lost, so the caller drops everything it cached. A store inside the
   * process loses none and never calls it.
   */
  subscribe(
    listener: (revocation: Revocation, publishedAtMs: number | undefined) => void,
    flush: (start: SubscriptionStart) => void,
  ): void;
  close(): Promise<void>;
}

/**
 * True once `nowMs` has reached the pair's expiry. An expiry that does not parse counts as
 * past: a pair whose end cannot be read must not work forever.
 */
export function isExpired(record: KeySummary, nowMs: number): boolean {
  if (record.expiresAt === undefined) return false;
  const endsAt = Date.parse(record.expiresAt);
  return Number.isNaN(endsAt) || endsAt <= nowMs;
}

/** A pair that authenticates at `nowMs`: active and not expired. */
export function isUsable(record: KeySummary, nowMs: number): boolean {
  return record.status === 'active' && !isExpired(record, nowMs);
}

/**
 * When a pair ended or will end, in milliseconds since the epoch: its revocation or its
 * expiry, whichever comes first; undefined for an active pair without expiry, and for one
 * whose times do not parse (the Redis scripts count such a pair's end from when they first
 * see it ended; the gateway itself always writes both times in full).
 */
export function endOf(record: KeySummary): number | undefined {
  const ends = [record.status === 'revoked' ? record.revokedAt : undefined, record.expiresAt]
    .map((text) => (text === undefined ? NaN : Date.parse(text)))
    .filter((ms) => !Number.isNaN(ms));
  return ends.length === 0 ? undefined : Math.min(...ends);
}

/** True once a pair has been ended for longer than `retainEndedSec`: the store drops it. */
export function isPastRetention(
  record: KeySummary,
  nowMs: number,
  retainEndedSec: number,
): boolean {
  const end = endOf(record);
  return end !== undefined && end + retainEndedSec * 1000 <= nowMs;
}

/**
 * Oldest first: by creation time, ties (the same millisecond) by key id compared as bytes.
 * Redis orders the sorted-set index the same way (score, then member), and newestFirst is
 * its exact reverse, so a cursor (the last id of a page) means the same in both orders.
 */
export function oldestFirst(a: KeySummary, b: KeySummary): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.key === b.key ? 0 : a.key < b.key ? -1 : 1;
}

/** Newest first, as the listing envelope's default `order: "desc"` says. */
export function newestFirst(a: KeySummary, b: KeySummary): number {
  return oldestFirst(b, a);
}

export type KeyStatus = 'active' | 'revoked';

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
}

export interface UserRecord {
  readonly username: string;
  readonly subject: string;
  readonly passwordHash: string;
  readonly createdAt: string;
  /** What the user's tokens may do: issued in their `scope` claim. */
  readonly scopes: readonly string[];
}

/** Whose bcrypt hash: a pair's secret hash, or a web-app user's password hash. */
export type HashOwner =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'user'; readonly username: string };

/** What a revocation event names: one pair, or every credential of a subject. */
export type Revocation =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'subject'; readonly subject: string };

/**
 * Atomic scripts on the store every instance shares (Redis Lua), for state that must hold
 * across instances and workers: rate limits, lockout, last use. Keys are the caller's, each
 * starting with `keyPrefix` (by default a Cluster hash tag, so multi-key scripts stay atomic).
 */
export interface ScriptRunner {
  readonly keyPrefix: string;
  /**
   * Runs `script` (sent once, then called by its SHA1) with `keys` and `args`. Rejects with a
   * GatewayError `credential_store_unavailable` when the store does not answer in time.
   */
  run(
    script: string,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown>;
}

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
  /** Newest first (see newestFirst), as the listing envelope's `order: "desc"` says. */
  listKeys(subject: string): Promise<KeyRecord[]>;
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
   * Records when pairs were last used (key id -> ISO 8601 UTC time), in one batch: never
   * recreates a pair deleted meanwhile, and never moves a pair's time backwards.
   */
  recordLastUse(uses: ReadonlyMap<string, string>): Promise<void>;
  getUser(username: string): Promise<UserRecord | undefined>;
  /** Adds a user; false (and nothing written) when the username is taken. Atomic. */
  addUser(record: UserRecord): Promise<boolean>;
  /**
   * Replaces the password hash of an existing user; false when there is none. Atomic, so a
   * user removed meanwhile is not brought back.
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
  /** Removes a user and announces that the subject's cached credentials must go. */
  removeUser(username: string): Promise<boolean>;
  /** Resolves when the store answers; throws when it does not. */
  ping(): Promise<void>;
  readonly health: StoreHealth;
  /**
   * Calls `listener` for every revocation announced by any gateway or writer; `flush` is
   * called when events may have been missed (a dropped subscription), so the caller can
   * drop everything it cached.
   */
  subscribe(listener: (revocation: Revocation) => void, flush: () => void): void;
  /** Present when the store is shared by instances (Redis); absent for the in-process store. */
  readonly scripts?: ScriptRunner;
  close(): Promise<void>;
}

/**
 * True once `nowMs` has reached the pair's expiry. An expiry that does not parse counts as
 * past: a pair whose end cannot be read must not work forever.
 */
export function isExpired(record: KeyRecord, nowMs: number): boolean {
  if (record.expiresAt === undefined) return false;
  const endsAt = Date.parse(record.expiresAt);
  return Number.isNaN(endsAt) || endsAt <= nowMs;
}

/** A pair that authenticates at `nowMs`: active and not expired. */
export function isUsable(record: KeyRecord, nowMs: number): boolean {
  return record.status === 'active' && !isExpired(record, nowMs);
}

/** Orders pairs newest first; ties (same timestamp) by key id, so the order is stable. */
export function newestFirst(a: KeyRecord, b: KeyRecord): number {
  return a.createdAt === b.createdAt
    ? a.key.localeCompare(b.key)
    : a.createdAt < b.createdAt
      ? 1
      : -1;
}

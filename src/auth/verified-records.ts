import type { CredentialStore, KeyRecord } from '../credentials/credential-store.js';
import {
  checkVerifiedRecord,
  formatVerifiedRecord,
  parseFleetKey,
  recordEnd,
  strongSecret,
  type FleetKey,
  type RecordCheck,
} from '../credentials/verified-record.js';

/**
 * `written` after a bcrypt run; `renewed` a hit past half its life, given a new end;
 * `superseded` the pair changed (revoked, a new hash) since it was read; `failed` the store did
 * not answer (the next success tries again).
 */
export type RecordWrite = 'written' | 'renewed' | 'superseded' | 'failed';

/** What the records do, for metrics and logs. */
export interface RecordEvents {
  checked(result: RecordCheck): void;
  wrote(result: RecordWrite, error?: unknown): void;
  /** The fleet key could not be read: records are skipped (bcrypt decides) until it can. */
  fleetKeyUnavailable(error: unknown): void;
}

export interface VerifiedRecordsOptions {
  readonly store: Pick<CredentialStore, 'fleetKey' | 'keepVerifiedRecord'>;
  /** The operator's fleet key (configured, base64); absent: the store's own, shared. */
  readonly fleetKey?: FleetKey | undefined;
  /** How long a record proves its pair (capped at the pair's expiry). */
  readonly ttlSec: number;
  readonly now: () => number;
  readonly events?: RecordEvents | undefined;
}

export interface VerifiedRecords {
  /**
   * True when a record may prove `secret` before its pair is read: a secret of the gateway's
   * own form (a writer's pair marked strong is known only once read).
   */
  mayProve(secret: string): boolean;
  /**
   * True when the pair's record proves `secret` (the pair read in the same round trip, and
   * usable): then no bcrypt run is needed. Never throws: without a fleet key it is false.
   * Only for a strong secret; a weak one is false at once, by its form alone.
   */
  proves(pair: KeyRecord, secret: string): Promise<boolean>;
  /** bcrypt has accepted `secret` for `pair`: keeps a record of it, without waiting. */
  afterBcrypt(pair: KeyRecord, secret: string): void;
}

/**
 * The fleet-wide verified records (credentials/verified-record.ts) on the request path: a
 * process cache miss checks the pair's record with one HMAC before paying bcrypt, and a
 * bcrypt success leaves one for every gateway and worker on the same store. A record in its
 * second half is renewed by a hit (the secret has just been proved), so a pair in use never
 * pays bcrypt again while its hash, status and the fleet key stay.
 */
export function createVerifiedRecords(options: VerifiedRecordsOptions): VerifiedRecords {
  const { store, ttlSec, now, events } = options;
  const ttlMs = ttlSec * 1000;
  let fleetKey: Promise<FleetKey> | undefined =
    options.fleetKey === undefined ? undefined : Promise.resolve(options.fleetKey);
  const loadFleetKey = (): Promise<FleetKey> => {
    fleetKey ??= store.fleetKey().then((text) => {
      const parsed = parseFleetKey(text);
      if (parsed === undefined) throw new Error('the stored fleet key is not 32 bytes of base64');
      return parsed;
    });
    return fleetKey;
  };
  /** The fleet key, or undefined (told) when it cannot be read now; asked again next time. */
  const fleet = async (): Promise<FleetKey | undefined> => {
    try {
      return await loadFleetKey();
    } catch (error) {
      fleetKey = undefined;
      events?.fleetKeyUnavailable(error);
      return undefined;
    }
  };
  /** A new record's end: the TTL from now, or the pair's expiry if sooner. */
  const endFor = (pair: KeyRecord, at: number): number =>
    Math.min(at + ttlMs, pair.expiresAt === undefined ? Infinity : Date.parse(pair.expiresAt));
  // One write per pair at a time: a burst of hits past half-life renews once.
  const writing = new Set<string>();
  const keep = (pair: KeyRecord, secret: string, kind: 'written' | 'renewed'): void => {
    if (writing.has(pair.key)) return;
    writing.add(pair.key);
    const write = async (): Promise<RecordWrite> => {
      const key = await fleet();
      if (key === undefined) return 'failed';
      const record = formatVerifiedRecord(key, { ...pair, secret }, endFor(pair, now()));
      return (await store.keepVerifiedRecord(pair.key, pair.secretHash, record))
        ? kind
        : 'superseded';
    };
    void write()
      .then(
        (result) => events?.wrote(result),
        (error: unknown) => events?.wrote('failed', error),
      )
      .finally(() => writing.delete(pair.key));
  };
  return {
    mayProve: (secret) => strongSecret(secret, undefined),
    async proves(pair, secret) {
      if (!strongSecret(secret, pair.secretBits)) return false;
      const key = await fleet();
      if (key === undefined) return false;
      const at = now();
      const result = checkVerifiedRecord(key, pair.verifiedRecord, { ...pair, secret }, at);
      events?.checked(result);
      if (result !== 'hit') return false;
      // Renewed once a new record would end at least half a TTL later than this one: a pair
      // near its expiry, whose records cannot outlive it, is not rewritten at every hit.
      if (endFor(pair, at) - (recordEnd(pair.verifiedRecord) ?? at) >= ttlMs / 2)
        keep(pair, secret, 'renewed');
      return true;
    },
    afterBcrypt(pair, secret) {
      if (strongSecret(secret, pair.secretBits)) keep(pair, secret, 'written');
    },
  };
}

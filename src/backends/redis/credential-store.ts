import { Cluster } from 'ioredis';
import {
  FIRST_PAGE,
  isPastRetention,
  type CredentialStore,
  type KeyRecord,
  type KeySummary,
  type RetentionOptions,
} from '../../credentials/credential-store.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { parseKeyId } from '../../identity/key-id.js';
import type { Unlock } from '../../protection/lockout.js';
import type { RedisClient, RedisConnection, StoreLog } from './client.js';
import {
  LISTED_FIELDS,
  listedFields,
  toKeyRecord,
  toKeySummary,
  toUserRecord,
} from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import {
  SUBSCRIBER_TIMEOUT_MS,
  subscribeRevocations,
  type RevocationSubscription,
} from './revocations.js';
import { createPairRun, pairsHere, pairsInSingleSlot, storedTag } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import { subscriberConnections } from './subscriber-connections.js';
import { redisVerifiedRecords } from './verified-records.js';
import {
  ADD_USER,
  COUNT_ACTIVE_PAIRS,
  CREATE_PAIR,
  LIST_PAIRS,
  RECORD_LAST_USE,
  REMOVE_USER,
  REPLACE_HASH,
  REVOKE_PAIR,
  REVOKE_SUBJECT_PAIRS,
  SET_USER_PASSWORD,
} from './scripts.js';
import type { SingleSlot } from './single-slot.js';

/** Pairs per script run: each batch stays a short script, whatever the number of pairs. */
const LAST_USE_BATCH = 500;

/** Script runs of one last-use batch in flight at once (on a Cluster, each slot's pairs are one run). */
const LAST_USE_RUNS_AT_ONCE = 64;

export interface RedisCredentialStoreDeps {
  readonly client: RedisClient;
  readonly connection: RedisConnection;
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  /** The single-slot layout of earlier versions, read and moved from; undefined: none. */
  readonly single: SingleSlot | undefined;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  /** How long ended pairs are kept (keys.retainEndedDays). */
  readonly retention: RetentionOptions;
  /** Where the revocation subscription's changes of state are logged; none: silent. */
  readonly log?: StoreLog | undefined;
  /** Told of the unlocks the revocation channel carries (`keys unlock`); none: ignored. */
  readonly unlocks?: UnlockListener | undefined;
}

/** What hears the lockouts an operator lifts: the locks this process remembers. */
export interface UnlockListener {
  readonly unlocked: (unlock: Unlock) => void;
  /** The subscription stands (again): unlocks published while it did not were lost. */
  readonly missed: () => void;
}

/** A pair as found: its record, and its hash's name, here or in the single slot. */
interface FoundPair {
  readonly record: KeyRecord;
  readonly hash: string;
  readonly inSingleSlot: boolean;
}

/**
 * The credential store on Redis: the layout of layout.ts, the scripts of scripts/. While a
 * single-slot layout of earlier versions is configured, pairs and users not found here are
 * read there, and a subject's pairs are moved here before any script changes or lists them,
 * so that one script always sees all of them (single-slot.ts).
 */
export function createRedisCredentialStore(deps: RedisCredentialStoreDeps): CredentialStore {
  const { client, connection, runner, layout, single, now, retention } = deps;
  const runPairs = createPairRun({ runner, now, retention });
  const perSlot = client instanceof Cluster;
  let subscription: RevocationSubscription | undefined;

  /** The tag a pair's hash is under: the id's own, or its index entry's; undefined: neither. */
  const tagOf = async (id: string): Promise<string | undefined> =>
    parseKeyId(id).kind === 'malformed' ? undefined : storedTag(runner, layout, id);

  const readPair = async (id: string, hash: string): Promise<KeyRecord | undefined> =>
    toKeyRecord(id, await runner.call(hash, (c, k) => c.hgetall(k)));

  const locate = async (id: string): Promise<FoundPair | undefined> => {
    const tag = await tagOf(id);
    let found: FoundPair | undefined;
    if (tag !== undefined) {
      const hash = layout.keyAt(tag, id);
      const record = await readPair(id, hash);
      // A hash under another tag than its subject's is no pair of this id: its subject's
      // scripts (the cap, revocations, the listing) would never see it.
      if (record !== undefined && layout.tagOf(record.subject) === tag)
        found = { record, hash, inSingleSlot: false };
    }
    if (found === undefined && single !== undefined && parseKeyId(id).kind !== 'malformed') {
      const hash = single.layout.key(id);
      const record = await readPair(id, hash);
      if (record !== undefined) found = { record, hash, inSingleSlot: true };
    }
    // Past its retention a pair is gone, whether or not a script has deleted its hash yet.
    return found === undefined || isPastRetention(found.record, now(), retention.retainEndedSec)
      ? undefined
      : found;
  };

  const getKey = async (key: string): Promise<KeyRecord | undefined> => (await locate(key))?.record;

  /** Moves what the subject still has in the single slot here: then one script sees it all. */
  const moveSubject = async (subject: string): Promise<void> => {
    if (single !== undefined && (await single.holdsSubject(subject)))
      await single.moveSubject(subject);
  };

  /** A pair script of the subject, once its pairs are all here. */
  const onPairs: typeof runPairs = async (script, subject, place, keys, args) => {
    await moveSubject(subject);
    return runPairs(script, subject, place, keys, args);
  };

  /** A compare-and-set here, then, for a hash not here, in the single slot. */
  const replaceAt = async (
    here: string | undefined,
    there: string | undefined,
    field: string,
    expected: string,
    next: string,
  ): Promise<boolean> => {
    for (const hash of [here, there]) {
      if (hash === undefined) continue;
      const replaced = await runner.run(REPLACE_HASH, { hash }, { field, expected, next });
      if (replaced !== -1) return replaced === 1;
    }
    return false;
  };

  /** Records last uses at `hashes`; resolves with the entries whose hash does not exist. */
  const recordAt = async (
    entries: readonly (readonly [string, string])[],
    hashOf: (id: string) => string,
  ): Promise<(readonly [string, string])[]> => {
    const absent: (readonly [string, string])[] = [];
    for (let i = 0; i < entries.length; i += LAST_USE_BATCH) {
      const batch = entries.slice(i, i + LAST_USE_BATCH);
      const missing = (await runner.run(
        RECORD_LAST_USE,
        { hashes: batch.map(([key]) => hashOf(key)) },
        { times: batch.map(([, at]) => at) },
      )) as number[];
      for (const position of missing) {
        const entry = batch[position - 1];
        if (entry !== undefined) absent.push(entry);
      }
    }
    return absent;
  };

  return {
    getKey,
    ...redisVerifiedRecords(runner, layout),
    listKeys: async (subject, page = FIRST_PAGE) => {
      // Two round trips, whatever the page size: the ids, then the page's hashes declared.
      const reply = await onPairs(
        LIST_PAIRS,
        subject,
        pairsHere(layout, subject),
        {},
        {
          limit: page.limit,
          order: page.order,
          after: page.after ?? '',
          fields: LISTED_FIELDS,
        },
      );
      if (reply[0] !== 1) return undefined;
      const records: KeySummary[] = [];
      for (let i = 1; i < reply.length; i += 2) {
        const values = reply[i + 1] as (string | null)[];
        const record = toKeySummary(String(reply[i]), listedFields(values));
        if (record !== undefined) records.push(record);
      }
      return records;
    },
    createKey: async (record, maxActive) => {
      const { key, subject } = record;
      const tag = layout.tagOf(subject);
      const parsed = parseKeyId(key);
      if (parsed.kind === 'tagged' && parsed.tag !== tag)
        throw new TypeError("a self-describing key id carries its subject's tag");
      // An id without a tag is found through its index entry, claimed first (SET NX): an id
      // another subject's pair holds is taken.
      let claimed = false;
      if (parsed.kind !== 'tagged') {
        claimed = (await runner.call(layout.keyTag(key), (c, k) => c.set(k, tag, 'NX'))) === 'OK';
        if (!claimed && (await tagOf(key)) !== tag) return false;
      }
      const createdMs = Date.parse(record.createdAt);
      const [created] = await onPairs(
        CREATE_PAIR,
        subject,
        pairsHere(layout, subject),
        { key: layout.key(key, subject) },
        {
          maxActive,
          id: key,
          secretHash: record.secretHash,
          label: record.label,
          createdAt: record.createdAt,
          createdMs: Number.isNaN(createdMs) ? 0 : createdMs,
          expiresAt: record.expiresAt ?? '',
          scopes: record.scopes.join(' '),
        },
      );
      if (created !== 1 && claimed) await runner.call(layout.keyTag(key), (c, k) => c.del(k));
      return created === 1;
    },
    countActiveKeys: async (subject) =>
      Number((await onPairs(COUNT_ACTIVE_PAIRS, subject, pairsHere(layout, subject), {}, {}))[0]),
    revokeKey: async (key, at, options = {}) => {
      let found = await locate(key);
      if (found === undefined) return undefined;
      const { subject } = found.record;
      if (found.inSingleSlot && single !== undefined) {
        // Moved here with the rest of its subject's pairs (or alone: no index named it), so
        // that keeping the last usable pair counts them all; a pair that cannot move (a
        // tag that is not its subject's) is revoked where it is.
        await moveSubject(subject);
        await single.movePair(key);
        found = await locate(key);
        if (found === undefined) return undefined;
      }
      const left = found.inSingleSlot && single !== undefined;
      const place = left ? pairsInSingleSlot(single.layout, subject) : pairsHere(layout, subject);
      // A pair left in the single slot is not among its subject's pairs here, which its
      // script cannot see: an active pair here means it is not the last one.
      const keepLast =
        options.keepLastActive === true &&
        !(
          left &&
          Number(
            (await runPairs(COUNT_ACTIVE_PAIRS, subject, pairsHere(layout, subject), {}, {}))[0],
          ) > 0
        );
      const [outcome] = await onPairs(
        REVOKE_PAIR,
        subject,
        place,
        { key: found.hash },
        {
          id: key,
          revokedAt: at,
          keepLastActive: keepLast ? '1' : '0',
          channel: layout.channel,
        },
      );
      if (outcome === -1) throw new GatewayError('conflict');
      if (outcome === 0) return undefined;
      const { record } = found;
      return record.status === 'revoked'
        ? record
        : { ...record, status: 'revoked' as const, revokedAt: at };
    },
    revokeSubjectKeys: async (subject, at) =>
      (
        await onPairs(
          REVOKE_SUBJECT_PAIRS,
          subject,
          pairsHere(layout, subject),
          {},
          { revokedAt: at, channel: layout.channel },
        )
      ).map(String),
    async recordLastUse(uses) {
      const entries = [...uses];
      // Each pair's hash found as getKey finds it. A Cluster runs a script only on keys of one
      // slot: one run per tag. One Redis (standalone, Sentinel) takes any keys in a run: a
      // batch of many subjects' pairs is one run per LAST_USE_BATCH, not one per subject.
      const tags = await Promise.all(entries.map(([key]) => tagOf(key)));
      const tagOfKey = new Map<string, string>();
      const groups = new Map<string, (readonly [string, string])[]>();
      const elsewhere: (readonly [string, string])[] = [];
      entries.forEach((entry, i) => {
        const tag = tags[i];
        if (tag === undefined) {
          elsewhere.push(entry);
          return;
        }
        tagOfKey.set(entry[0], tag);
        const group = perSlot ? tag : '';
        const members = groups.get(group);
        if (members === undefined) groups.set(group, [entry]);
        else members.push(entry);
      });
      const hashOf = (key: string) => layout.keyAt(tagOfKey.get(key) ?? '', key);
      const runs = [...groups.values()];
      for (let i = 0; i < runs.length; i += LAST_USE_RUNS_AT_ONCE) {
        const absent = await Promise.all(
          runs.slice(i, i + LAST_USE_RUNS_AT_ONCE).map((group) => recordAt(group, hashOf)),
        );
        elsewhere.push(...absent.flat());
      }
      // Pairs not moved out of the single slot yet are all in its one slot: one run per batch.
      if (single !== undefined && elsewhere.length > 0)
        await recordAt(elsewhere, single.layout.key);
    },
    getUser: async (username) => {
      const here = toUserRecord(
        username,
        await runner.call(layout.user(username), (c, k) => c.hgetall(k)),
      );
      if (here !== undefined || single === undefined) return here;
      return toUserRecord(
        username,
        await runner.call(single.layout.user(username), (c, k) => c.hgetall(k)),
      );
    },
    addUser: async (record) => {
      // A user not moved out of the single slot yet holds the username too.
      if (
        single !== undefined &&
        (await runner.call(single.layout.user(record.username), (c, k) => c.exists(k))) === 1
      )
        return false;
      return (
        (await runner.run(
          ADD_USER,
          { user: layout.user(record.username) },
          {
            passwordHash: record.passwordHash,
            subject: record.subject,
            createdAt: record.createdAt,
            scopes: record.scopes.join(' '),
          },
        )) === 1
      );
    },
    setUserPassword: async (username, passwordHash) => {
      for (const user of [layout.user(username), single?.layout.user(username)]) {
        if (user === undefined) continue;
        if (
          (await runner.run(
            SET_USER_PASSWORD,
            { user },
            { passwordHash, channel: layout.channel },
          )) === 1
        )
          return true;
      }
      return false;
    },
    replaceHash: async (owner, expected, next) => {
      if (owner.kind === 'user')
        return replaceAt(
          layout.user(owner.username),
          single?.layout.user(owner.username),
          'password_hash',
          expected,
          next,
        );
      const tag = await tagOf(owner.key);
      return replaceAt(
        tag === undefined ? undefined : layout.keyAt(tag, owner.key),
        single?.layout.key(owner.key),
        'secret_hash',
        expected,
        next,
      );
    },
    removeUser: async (username) => {
      // Wherever it is: a copy left in the single slot would be read again.
      const users = [layout.user(username), single?.layout.user(username)];
      const removed = await Promise.all(
        users.map(async (user) =>
          user === undefined
            ? 0
            : await runner.run(REMOVE_USER, { user }, { channel: layout.channel }),
        ),
      );
      return removed.includes(1);
    },
    ping: () => runner.ping(),
    health: connection,
    subscribe(listener, flush) {
      if (subscription !== undefined) throw new Error('subscribe() may be called once');
      subscription = subscribeRevocations({
        connections: subscriberConnections(client, SUBSCRIBER_TIMEOUT_MS),
        channel: layout.channel,
        listener,
        unlocked: deps.unlocks?.unlocked,
        flush: (start) => {
          deps.unlocks?.missed();
          flush(start);
        },
        log: deps.log,
      });
    },
    async close() {
      connection.closing();
      await Promise.allSettled([client.quit(), subscription?.close()]);
      client.disconnect();
    },
  };
}

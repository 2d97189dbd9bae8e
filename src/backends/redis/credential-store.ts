import {
  FIRST_PAGE,
  isPastRetention,
  type CredentialStore,
  type KeyRecord,
  type KeySummary,
  type RetentionOptions,
} from '../../credentials/credential-store.js';
import { GatewayError } from '../../errors/gateway-error.js';
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
import type { Named, Script, ScriptRunner, ScriptValue } from './run-script.js';
import { subscriberConnections } from './subscriber-connections.js';
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

/** Pairs per script run: each batch stays a short script, whatever the number of pairs. */
const LAST_USE_BATCH = 500;

/**
 * Runs of a pair script per operation at most: a safety net, not a budget. The first run asks
 * for the hashes it needs (when it needs any), the second has them; a listing that meets
 * entries whose hash is gone asks once more per 1,000 of them (list-pairs.lua), and a run
 * asks again when the index changed in between.
 */
const MAX_PAIR_RUNS = 50;

export interface RedisCredentialStoreDeps {
  readonly client: RedisClient;
  readonly connection: RedisConnection;
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  /** How long ended pairs are kept (keys.retainEndedDays). */
  readonly retention: RetentionOptions;
  /** Where the revocation subscription's changes of state are logged; none: silent. */
  readonly log?: StoreLog | undefined;
}

/** The KEYS and ARGV every pair script has (scripts.ts), which onPairs fills in. */
type PairKeyName = 'pairs' | 'ends' | 'active' | 'legacy' | 'hashes';
type PairArgName = 'nowMs' | 'retainMs' | 'subject' | 'ids';

/** The credential store on Redis: the layout of layout.ts, the scripts of scripts/. */
export function createRedisCredentialStore(deps: RedisCredentialStoreDeps): CredentialStore {
  const { client, connection, runner, layout, now, retention } = deps;
  let subscription: RevocationSubscription | undefined;

  const getKey = async (key: string): Promise<KeyRecord | undefined> => {
    const record = toKeyRecord(key, await runner.call(layout.key(key), (c, k) => c.hgetall(k)));
    // Past its retention a pair is gone, whether or not a script has deleted its hash yet.
    return record === undefined || isPastRetention(record, now(), retention.retainEndedSec)
      ? undefined
      : record;
  };

  /**
   * Runs a pair script of `subject` (scripts/pair-index.lua): again with the hashes it asks
   * for, until it is done; returns what follows its 'done'.
   */
  const onPairs = async <Keys extends readonly string[], Args extends readonly string[]>(
    script: Script<Keys, Args>,
    subject: string,
    keys: Omit<Named<Keys, string>, PairKeyName>,
    args: Omit<Named<Args, ScriptValue>, PairArgName>,
  ): Promise<unknown[]> => {
    const nowMs = now();
    let ids: string[] = [];
    for (let run = 0; run < MAX_PAIR_RUNS; run += 1) {
      // Each script's names are its own plus the common ones: what TypeScript cannot follow
      // through the spread of a generic, hence the casts.
      const reply = (await runner.run(
        script,
        {
          pairs: layout.subjectPairs(subject),
          ends: layout.subjectEnds(subject),
          active: layout.subjectActive(subject),
          legacy: layout.subjectLegacyKeys(subject),
          hashes: ids.map(layout.key),
          ...keys,
        } as unknown as Named<Keys, string>,
        {
          nowMs,
          retainMs: retention.retainEndedSec * 1000,
          subject,
          ids,
          ...args,
        } as unknown as Named<Args, ScriptValue>,
      )) as unknown[];
      if (reply[0] === 'done') return reply.slice(1);
      ids = reply.slice(1).map(String);
    }
    throw new GatewayError('credential_store_unavailable', {
      cause: new Error(
        `the pairs of a subject changed under ${MAX_PAIR_RUNS} runs of ${script.name}`,
      ),
      retryAfterSec: 1,
    });
  };

  return {
    getKey,
    listKeys: async (subject, page = FIRST_PAGE) => {
      // Two round trips, whatever the page size: the ids, then the page's hashes declared.
      const reply = await onPairs(
        LIST_PAIRS,
        subject,
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
      const createdMs = Date.parse(record.createdAt);
      const [created] = await onPairs(
        CREATE_PAIR,
        record.subject,
        { key: layout.key(record.key) },
        {
          maxActive,
          id: record.key,
          secretHash: record.secretHash,
          label: record.label,
          createdAt: record.createdAt,
          createdMs: Number.isNaN(createdMs) ? 0 : createdMs,
          expiresAt: record.expiresAt ?? '',
          scopes: record.scopes.join(' '),
        },
      );
      return created === 1;
    },
    countActiveKeys: async (subject) =>
      Number((await onPairs(COUNT_ACTIVE_PAIRS, subject, {}, {}))[0]),
    revokeKey: async (key, at, options = {}) => {
      const found = await getKey(key);
      if (found === undefined) return undefined;
      const [outcome] = await onPairs(
        REVOKE_PAIR,
        found.subject,
        { key: layout.key(key) },
        {
          id: key,
          revokedAt: at,
          keepLastActive: options.keepLastActive === true ? '1' : '0',
          channel: layout.channel,
        },
      );
      if (outcome === -1) throw new GatewayError('conflict');
      if (outcome === 0) return undefined;
      return found.status === 'revoked'
        ? found
        : { ...found, status: 'revoked' as const, revokedAt: at };
    },
    revokeSubjectKeys: async (subject, at) =>
      (
        await onPairs(REVOKE_SUBJECT_PAIRS, subject, {}, { revokedAt: at, channel: layout.channel })
      ).map(String),
    async recordLastUse(uses) {
      const entries = [...uses];
      for (let i = 0; i < entries.length; i += LAST_USE_BATCH) {
        const batch = entries.slice(i, i + LAST_USE_BATCH);
        await runner.run(
          RECORD_LAST_USE,
          { hashes: batch.map(([key]) => layout.key(key)) },
          { times: batch.map(([, at]) => at) },
        );
      }
    },
    getUser: async (username) =>
      toUserRecord(username, await runner.call(layout.user(username), (c, k) => c.hgetall(k))),
    addUser: async (record) =>
      (await runner.run(
        ADD_USER,
        { user: layout.user(record.username) },
        {
          passwordHash: record.passwordHash,
          subject: record.subject,
          createdAt: record.createdAt,
          scopes: record.scopes.join(' '),
        },
      )) === 1,
    setUserPassword: async (username, passwordHash) =>
      (await runner.run(SET_USER_PASSWORD, { user: layout.user(username) }, { passwordHash })) ===
      1,
    replaceHash: async (owner, expected, next) => {
      const [hash, field] =
        owner.kind === 'key'
          ? [layout.key(owner.key), 'secret_hash']
          : [layout.user(owner.username), 'password_hash'];
      return (await runner.run(REPLACE_HASH, { hash }, { field, expected, next })) === 1;
    },
    removeUser: async (username) =>
      (await runner.run(
        REMOVE_USER,
        { user: layout.user(username) },
        { channel: layout.channel },
      )) === 1,
    ping: () => runner.ping(),
    health: connection,
    subscribe(listener, flush) {
      if (subscription !== undefined) throw new Error('subscribe() may be called once');
      subscription = subscribeRevocations({
        connections: subscriberConnections(client, SUBSCRIBER_TIMEOUT_MS),
        channel: layout.channel,
        listener,
        flush,
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

import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { GatewayError } from '../errors/gateway-error.js';
import { parseScopeList } from '../identity/scopes.js';
import type { RedisConfig } from '../config/config-schema.js';
import {
  DEFAULT_RETAIN_ENDED_SEC,
  FIRST_PAGE,
  type CredentialStore,
  type KeyRecord,
  type KeyStatus,
  type KeySummary,
  type RetentionOptions,
  type Revocation,
  type ScriptRunner,
  type UserRecord,
} from './credential-store.js';
import {
  COUNT_USABLE,
  CREATE_PAIR,
  LIST_PAIRS,
  LISTED_FIELDS,
  REVOKE_PAIR,
  REVOKE_SUBJECT_PAIRS,
} from './redis-pair-scripts.js';
import {
  redisAddress,
  redisSecrets,
  watchRedisConnection,
  type RedisConnection,
  type StoreLog,
} from './redis-connection.js';

/**
 * Redis layout (documented in the README; the web application writes the same keys).
 * Every key starts with `keyPrefix`, whose default `{ag}:` is a Cluster hash tag, so all of
 * them live in one slot and the multi-key scripts below stay atomic on Redis Cluster.
 *
 *   <p>key:<key>                HASH secret_hash, subject, label, status, created_at, revoked_at,
 *                                    expires_at (optional, ISO 8601 UTC like created_at),
 *                                    scopes (optional, space-separated scope tokens),
 *                                    last_used_at (written by the gateways, ISO 8601 UTC),
 *                                    rate_limit (optional, read by the rate limiter's script);
 *                                    a TTL once its end is known: end + retention
 *   <p>subject:<subject>        HASH rate_limit (read by the rate limiter's script)
 *   <p>subject:<subject>:pairs  ZSET every key id of the subject, scored by created_at (Unix ms)
 *   <p>subject:<subject>:ends   ZSET the key ids with an end (expiry or revocation), scored by it
 *   <p>subject:<subject>:active SET  the active key ids of the subject
 *   <p>subject:<subject>:keys   SET  the index older writers kept: folded into :pairs, then deleted
 *   <p>user:<username>          HASH password_hash, subject, created_at, scopes
 *   <p>revocations              pub/sub channel: "key:<key>" or "subject:<subject>"
 */
export function redisKeys(prefix: string) {
  return {
    key: (key: string) => `${prefix}key:${key}`,
    /** A subject's own settings (today `rate_limit`), written by the web application. */
    subject: (subject: string) => `${prefix}subject:${subject}`,
    subjectPairs: (subject: string) => `${prefix}subject:${subject}:pairs`,
    subjectEnds: (subject: string) => `${prefix}subject:${subject}:ends`,
    subjectActive: (subject: string) => `${prefix}subject:${subject}:active`,
    /** The SET index of older writers (before :pairs); read once, folded in, deleted. */
    subjectLegacyKeys: (subject: string) => `${prefix}subject:${subject}:keys`,
    user: (username: string) => `${prefix}user:${username}`,
    channel: `${prefix}revocations`,
  };
}

/**
 * One batch of last uses: KEYS the key hashes, ARGV their times. HSET only on a hash that
 * exists (a pair deleted meanwhile stays deleted), and only forward in time (another
 * instance may have written a later use); fixed-width ISO strings compare as text.
 */
const RECORD_LAST_USE = `
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    local previous = redis.call('HGET', key, 'last_used_at')
    if not previous or previous < ARGV[i] then redis.call('HSET', key, 'last_used_at', ARGV[i]) end
  end
end
return 0`;

/** Pairs per script run: each batch stays a short script, whatever the number of pairs. */
const LAST_USE_BATCH = 500;

const ADD_USER = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'password_hash', ARGV[1], 'subject', ARGV[2], 'created_at', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'scopes', ARGV[4]) end
return 1`;

const SET_USER_PASSWORD = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'password_hash', ARGV[1])
return 1`;

/**
 * Compare-and-set of one hash field (KEYS[1] the key or user hash; ARGV: the field, the hash
 * expected, the next one). A missing hash reads as false, never equal: nothing is recreated.
 */
const REPLACE_HASH = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`;

const REMOVE_USER = `
local subject = redis.call('HGET', KEYS[1], 'subject')
if not subject then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], 'subject:' .. subject)
return 1`;

type Client = Redis | Cluster;

export function createRedisClient(config: RedisConfig): Client {
  const options = {
    // Fail fast during an outage: a command waits at most commandTimeoutMs, is retried
    // once, and the client keeps reconnecting in the background. ioredis arms this timer
    // when a command is sent or queued on a Redis connection (standalone, Sentinel, and
    // each Cluster node), so it also frees the command, not only the caller.
    commandTimeout: config.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times: number) => Math.min(50 * times, 1_000),
  };
  const nodes = config.nodes.map((node) => {
    const [host = '127.0.0.1', port = '6379'] = node.split(':');
    return { host, port: Number(port) };
  });
  // The Cluster client has an offline queue of its own, with no timer: the store never
  // hands it a command before it is ready (see createRedisStore).
  if (config.mode === 'cluster') return new Cluster(nodes, { redisOptions: options });
  if (config.mode === 'sentinel') {
    return new Redis({ ...options, sentinels: nodes, name: config.sentinelName ?? 'mymaster' });
  }
  return new Redis(config.url, options);
}

/** The client-facing error stays the catalogue's; its cause names Redis, its address and why. */
function unavailable(connection: RedisConnection, error: unknown): GatewayError {
  return new GatewayError('credential_store_unavailable', {
    cause: connection.describe(error),
    retryAfterSec: 1,
  });
}

/**
 * Runs one store operation within `timeoutMs`, whatever the client mode, and turns every
 * failure into `credential_store_unavailable`. ioredis's own commandTimeout covers commands
 * on a connection; this bound also covers what it leaves open: a Cluster that is not ready
 * yet (or any more) holds commands in its offline queue with no timer, and its redirection
 * and CLUSTERDOWN retries add up beyond one command's timeout. A Cluster command is only
 * issued once the client is ready, so an outage does not pile commands into that queue.
 */
function createGuard(client: Client, timeoutMs: number, connection: RedisConnection) {
  let ready: Promise<void> | undefined;
  // One 'ready' listener per not-ready period, shared by every waiting call: a burst of
  // requests during an outage must not add a listener each.
  const whenReady = (): Promise<void> | undefined => {
    if (!(client instanceof Cluster) || client.status === 'ready' || client.status === 'end')
      return undefined;
    // A lazyConnect client connects on its first command, which is not sent before ready.
    if (client.status === 'wait') client.connect().catch(() => undefined);
    ready ??= new Promise<void>((resolve) => {
      client.once('ready', () => {
        ready = undefined;
        resolve();
      });
    });
    return ready;
  };
  return async function guarded<T>(operation: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const waiting = whenReady();
      if (waiting !== undefined) await Promise.race([waiting, deadline]);
      return await Promise.race([operation(), deadline]);
    } catch (error) {
      throw unavailable(connection, error);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** What a key hash says of a pair, but the hash of its secret; undefined without a subject. */
function toKeySummary(
  key: string,
  fields: Readonly<Record<string, string | undefined>>,
): KeySummary | undefined {
  const { subject, status } = fields;
  if (subject === undefined) return undefined;
  return {
    key,
    subject,
    label: fields.label ?? '',
    status: (status === 'active' ? 'active' : 'revoked') satisfies KeyStatus,
    createdAt: fields.created_at ?? '',
    revokedAt: fields.revoked_at,
    expiresAt: fields.expires_at,
    scopes: parseScopeList(fields.scopes),
    lastUsedAt: fields.last_used_at,
  };
}

function toKeyRecord(key: string, fields: Record<string, string>): KeyRecord | undefined {
  const summary = toKeySummary(key, fields);
  const secretHash = fields.secret_hash;
  return summary === undefined || secretHash === undefined ? undefined : { ...summary, secretHash };
}

/** A listed pair's fields as LIST_PAIRS returns them, in LISTED_FIELDS order (null: absent). */
function listedFields(values: readonly (string | null)[]): Record<string, string | undefined> {
  return Object.fromEntries(LISTED_FIELDS.map((name, i) => [name, values[i] ?? undefined]));
}

export interface RedisStoreOptions {
  readonly client?: Client;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now?: () => number;
  /** Where the connection's changes of state are logged (the gateway's logger); none: silent. */
  readonly log?: StoreLog | undefined;
  /** How long ended pairs are kept (keys.retainEndedDays). */
  readonly retention?: RetentionOptions;
}

/** How long a start waits for Redis's first answer: the connect timeout, and a second more. */
const SETTLE_WITHIN_MS = 3_000;

export function createRedisStore(
  config: RedisConfig,
  options: RedisStoreOptions = {},
): CredentialStore {
  const client = options.client ?? createRedisClient(config);
  const now = options.now ?? Date.now;
  const retention = options.retention ?? { retainEndedSec: DEFAULT_RETAIN_ENDED_SEC };
  const k = redisKeys(config.keyPrefix);
  // Its 'error' listener also keeps ioredis's connection errors from being thrown: they
  // surface as failed commands (503), and the client reconnects by itself.
  const connection = watchRedisConnection(client, {
    address: redisAddress(config),
    secrets: redisSecrets(config),
    log: options.log,
    settleWithinMs: SETTLE_WITHIN_MS,
  });
  const guarded = createGuard(client, config.commandTimeoutMs, connection);
  let subscriber: Client | undefined;

  const shas = new Map<string, string>();
  const scripts: ScriptRunner = {
    keyPrefix: config.keyPrefix,
    run: (script, keys, args) =>
      guarded(async () => {
        let sha = shas.get(script);
        if (sha === undefined) {
          sha = createHash('sha1').update(script).digest('hex');
          shas.set(script, sha);
        }
        try {
          return await client.evalsha(sha, keys.length, ...keys, ...args);
        } catch (error) {
          // A Redis restarted (or failed over) since: its script cache is empty.
          if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
          return await client.eval(script, keys.length, ...keys, ...args);
        }
      }),
  };

  const getKey = (key: string) =>
    guarded(async () => toKeyRecord(key, await client.hgetall(k.key(key))));

  /** The KEYS and ARGV every pair script starts with (see redis-pair-scripts.ts). */
  const subjectScript = (
    script: string,
    subject: string,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> => {
    const nowMs = now();
    return scripts.run(
      script,
      [
        k.subjectPairs(subject),
        k.subjectEnds(subject),
        k.subjectActive(subject),
        k.subjectLegacyKeys(subject),
        ...keys,
      ],
      [
        k.key(''),
        nowMs,
        new Date(nowMs).toISOString(),
        retention.retainEndedSec * 1000,
        subject,
        ...args,
      ],
    );
  };

  return {
    scripts,
    getKey,
    listKeys: async (subject, page = FIRST_PAGE) => {
      // One round trip, whatever the page size: the script reads the page's hashes (all of
      // their fields but secret_hash).
      const reply = (await subjectScript(
        LIST_PAIRS,
        subject,
        [],
        [page.limit, page.order, page.after ?? ''],
      )) as unknown[];
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
      const created = await subjectScript(
        CREATE_PAIR,
        record.subject,
        [k.key(record.key)],
        [
          maxActive,
          record.secretHash,
          record.label,
          record.createdAt,
          Number.isNaN(createdMs) ? 0 : createdMs,
          record.key,
          record.expiresAt ?? '',
          record.scopes.join(' '),
        ],
      );
      return created === 1;
    },
    countActiveKeys: async (subject) => Number(await subjectScript(COUNT_USABLE, subject, [], [])),
    revokeKey: async (key, at, options = {}) => {
      const found = await getKey(key);
      if (found === undefined) return undefined;
      const outcome = await subjectScript(
        REVOKE_PAIR,
        found.subject,
        [k.key(key), k.channel],
        [at, key, options.keepLastActive === true ? '1' : '0'],
      );
      if (outcome === -1) throw new GatewayError('conflict');
      if (outcome === 0) return undefined;
      return found.status === 'revoked'
        ? found
        : { ...found, status: 'revoked' as const, revokedAt: at };
    },
    revokeSubjectKeys: async (subject, at) =>
      ((await subjectScript(REVOKE_SUBJECT_PAIRS, subject, [k.channel], [at])) as unknown[]).map(
        String,
      ),
    async recordLastUse(uses) {
      const entries = [...uses];
      for (let i = 0; i < entries.length; i += LAST_USE_BATCH) {
        const batch = entries.slice(i, i + LAST_USE_BATCH);
        await scripts.run(
          RECORD_LAST_USE,
          batch.map(([key]) => k.key(key)),
          batch.map(([, at]) => at),
        );
      }
    },
    getUser: (username) =>
      guarded(async () => {
        const fields = await client.hgetall(k.user(username));
        const { password_hash: passwordHash, subject } = fields;
        if (passwordHash === undefined || subject === undefined) return undefined;
        return {
          username,
          subject,
          passwordHash,
          createdAt: fields.created_at ?? '',
          scopes: parseScopeList(fields.scopes),
        } satisfies UserRecord;
      }),
    addUser: (record) =>
      guarded(
        async () =>
          (await client.eval(
            ADD_USER,
            1,
            k.user(record.username),
            record.passwordHash,
            record.subject,
            record.createdAt,
            record.scopes.join(' '),
          )) === 1,
      ),
    setUserPassword: (username, passwordHash) =>
      guarded(
        async () => (await client.eval(SET_USER_PASSWORD, 1, k.user(username), passwordHash)) === 1,
      ),
    replaceHash: async (owner, expected, next) => {
      const [hashKey, field] =
        owner.kind === 'key'
          ? [k.key(owner.key), 'secret_hash']
          : [k.user(owner.username), 'password_hash'];
      return (await scripts.run(REPLACE_HASH, [hashKey], [field, expected, next])) === 1;
    },
    removeUser: (username) =>
      guarded(async () => (await client.eval(REMOVE_USER, 2, k.user(username), k.channel)) === 1),
    ping: () =>
      guarded(async () => {
        await client.ping();
      }),
    health: connection,
    subscribe(listener, flush) {
      if (subscriber !== undefined) throw new Error('subscribe() may be called once');
      // Both client kinds have duplicate(); their signatures differ only in option types.
      const sub = (client as Redis).duplicate();
      subscriber = sub;
      sub.on('error', () => {
        // Reconnects by itself; a reconnect flushes (below), so no event is trusted as seen.
      });
      sub.on('ready', () => {
        // Subscribe on every (re)connection: ioredis's autoResubscribe restores only
        // channels that were subscribed before, so a SUBSCRIBE queued while Redis was down
        // at start would be lost for good. Whatever was published while no subscription
        // stood is lost too: once subscribed again, drop everything cached, so a missed
        // revocation cannot outlive the outage.
        sub.subscribe(k.channel).then(flush, () => {
          // The connection dropped again; the next 'ready' subscribes (and flushes) anew.
        });
      });
      sub.on('message', (_channel: string, message: string) => {
        const revocation = parseRevocation(message);
        if (revocation !== undefined) listener(revocation);
      });
    },
    async close() {
      connection.closing();
      await Promise.allSettled([client.quit(), subscriber?.quit()]);
      client.disconnect();
      subscriber?.disconnect();
    },
  };
}

export function parseRevocation(message: string): Revocation | undefined {
  if (message.startsWith('key:')) return { kind: 'key', key: message.slice(4) };
  if (message.startsWith('subject:')) return { kind: 'subject', subject: message.slice(8) };
  return undefined;
}

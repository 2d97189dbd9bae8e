import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { GatewayError } from '../errors/gateway-error.js';
import { parseScopeList } from '../identity/scopes.js';
import type { RedisConfig } from '../config/config-schema.js';
import {
  newestFirst,
  type CredentialStore,
  type KeyRecord,
  type KeyStatus,
  type Revocation,
  type ScriptRunner,
  type UserRecord,
} from './credential-store.js';
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
 *                                    rate_limit (optional, read by the rate limiter's script)
 *   <p>subject:<subject>        HASH rate_limit (read by the rate limiter's script)
 *   <p>subject:<subject>:keys   SET  every key id of the subject
 *   <p>subject:<subject>:active SET  the active key ids of the subject
 *   <p>user:<username>          HASH password_hash, subject, created_at, scopes
 *   <p>revocations              pub/sub channel: "key:<key>" or "subject:<subject>"
 */
export function redisKeys(prefix: string) {
  return {
    key: (key: string) => `${prefix}key:${key}`,
    /** A subject's own settings (today `rate_limit`), written by the web application. */
    subject: (subject: string) => `${prefix}subject:${subject}`,
    subjectKeys: (subject: string) => `${prefix}subject:${subject}:keys`,
    subjectActive: (subject: string) => `${prefix}subject:${subject}:active`,
    user: (username: string) => `${prefix}user:${username}`,
    channel: `${prefix}revocations`,
  };
}

/**
 * Takes the expired members out of an active set (ARGV: the key hash prefix, then now as an
 * ISO 8601 UTC string: the same fixed-width format compares correctly as text) and returns
 * how many are left. The hashes share the set's hash tag, so Cluster keeps them in its slot.
 */
const PRUNE_EXPIRED = `
local function usable(set, keyPrefix, now)
  local left = 0
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    local expires = redis.call('HGET', keyPrefix .. id, 'expires_at')
    if expires and expires <= now then redis.call('SREM', set, id) else left = left + 1 end
  end
  return left
end`;

const CREATE_KEY = `${PRUNE_EXPIRED}
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if usable(KEYS[3], ARGV[7], ARGV[8]) >= tonumber(ARGV[1]) then return -1 end
redis.call('HSET', KEYS[1], 'secret_hash', ARGV[2], 'subject', ARGV[3], 'label', ARGV[4], 'status', 'active', 'created_at', ARGV[5])
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'expires_at', ARGV[9]) end
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'scopes', ARGV[10]) end
redis.call('SADD', KEYS[2], ARGV[6])
redis.call('SADD', KEYS[3], ARGV[6])
return 1`;

const COUNT_USABLE = `${PRUNE_EXPIRED}
return usable(KEYS[1], ARGV[1], ARGV[2])`;

const REVOKE_KEY = `${PRUNE_EXPIRED}
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local active = redis.call('HGET', KEYS[1], 'status') ~= 'revoked'
if active and ARGV[3] == '1' then
  local expires = redis.call('HGET', KEYS[1], 'expires_at')
  local expired = expires and expires <= ARGV[5]
  if not expired and usable(KEYS[2], ARGV[4], ARGV[5]) <= 1 then return -1 end
end
if active then
  redis.call('HSET', KEYS[1], 'status', 'revoked', 'revoked_at', ARGV[1])
end
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('PUBLISH', KEYS[3], 'key:' .. ARGV[2])
return 1`;

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

function toKeyRecord(key: string, fields: Record<string, string>): KeyRecord | undefined {
  const { secret_hash: secretHash, subject, status } = fields;
  if (secretHash === undefined || subject === undefined) return undefined;
  return {
    key,
    subject,
    secretHash,
    label: fields.label ?? '',
    status: (status === 'active' ? 'active' : 'revoked') satisfies KeyStatus,
    createdAt: fields.created_at ?? '',
    revokedAt: fields.revoked_at,
    expiresAt: fields.expires_at,
    scopes: parseScopeList(fields.scopes),
    lastUsedAt: fields.last_used_at,
  };
}

export interface RedisStoreOptions {
  readonly client?: Client;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now?: () => number;
  /** Where the connection's changes of state are logged (the gateway's logger); none: silent. */
  readonly log?: StoreLog | undefined;
}

/** How long a start waits for Redis's first answer: the connect timeout, and a second more. */
const SETTLE_WITHIN_MS = 3_000;

export function createRedisStore(
  config: RedisConfig,
  options: RedisStoreOptions = {},
): CredentialStore {
  const client = options.client ?? createRedisClient(config);
  const now = options.now ?? Date.now;
  const nowIso = (): string => new Date(now()).toISOString();
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

  return {
    scripts,
    getKey,
    listKeys: async (subject) => {
      // Two round trips, each bounded on its own like any other command.
      const ids = await guarded(() => client.smembers(k.subjectKeys(subject)));
      const records = await guarded(() =>
        Promise.all(ids.map(async (id) => toKeyRecord(id, await client.hgetall(k.key(id))))),
      );
      return records
        .filter((r): r is KeyRecord => r !== undefined && r.subject === subject)
        .sort(newestFirst);
    },
    createKey: (record, maxActive) =>
      guarded(async () => {
        const created = await client.eval(
          CREATE_KEY,
          3,
          k.key(record.key),
          k.subjectKeys(record.subject),
          k.subjectActive(record.subject),
          String(maxActive),
          record.secretHash,
          record.subject,
          record.label,
          record.createdAt,
          record.key,
          k.key(''),
          nowIso(),
          record.expiresAt ?? '',
          record.scopes.join(' '),
        );
        return created === 1;
      }),
    countActiveKeys: (subject) =>
      guarded(async () =>
        Number(await client.eval(COUNT_USABLE, 1, k.subjectActive(subject), k.key(''), nowIso())),
      ),
    revokeKey: async (key, at, options = {}) => {
      const found = await getKey(key);
      if (found === undefined) return undefined;
      const outcome = await guarded(() =>
        client.eval(
          REVOKE_KEY,
          3,
          k.key(key),
          k.subjectActive(found.subject),
          k.channel,
          at,
          key,
          options.keepLastActive === true ? '1' : '0',
          k.key(''),
          nowIso(),
        ),
      );
      if (outcome === -1) throw new GatewayError('conflict');
      return found.status === 'revoked'
        ? found
        : { ...found, status: 'revoked' as const, revokedAt: at };
    },
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

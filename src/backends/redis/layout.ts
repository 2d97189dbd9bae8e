import { subjectTag } from '../../identity/key-id.js';
import type { LockoutCounter } from '../../protection/lockout.js';
import type { BucketId, BucketOwner } from '../../protection/rate-bucket-store.js';

/**
 * The Redis key layout: every key name (and so every hash tag) the gateway uses is formed
 * here and nowhere else. The web application writes the same keys, so the names are a
 * contract: the table of docs/redis-layout.md is checked against describeLayout() below.
 *
 * Every name starts with `credentials.redis.keyPrefix` (by default `ag:`, which holds no brace:
 * a brace in it would be every key's hash tag), then the hash tag `{<tag>}` of what the key
 * belongs to, so that on a Redis Cluster keys spread over every master (a tag is 5 hex digits
 * of SHA-256, key-id.ts, which reach every slot) while what one script changes atomically
 * shares a slot:
 *
 * - a subject's tag: its pairs' hashes, its settings, its indexes and its rate buckets (a
 *   pair's and the subject's overrides are read in the same script as the buckets);
 * - a username's tag: the user's hash (the token endpoint knows only the username) and its
 *   lockout counters; a key id's tag (the id as sent): the key's lockout counters;
 * - a client network's tag: its lockout counter and its rate bucket.
 *
 * A self-describing key id carries its subject's tag (key-id.ts), so a pair's hash is named
 * from the id alone; an id without one (a writer's own) is found through `keyTag`.
 */
export interface RedisLayout {
  /** The shard tag of a subject, a username, a key id or a network: 5 hex of its SHA-256. */
  readonly tagOf: (text: string) => string;
  /** A pair's hash, under its subject's tag: secret_hash, subject, label, status, times... */
  readonly key: (key: string, subject: string) => string;
  /** The same hash named from the tag: a tagged id's own, or what `keyTag` holds. */
  readonly keyAt: (tag: string, key: string) => string;
  /** For an id that carries no tag: the tag of its subject, where its hash is. */
  readonly keyTag: (key: string) => string;
  /** A subject's own settings (today `rate_limit`), written by the web application. */
  readonly subject: (subject: string) => string;
  /** ZSET of every pair of the subject, scored by created_at (ms). */
  readonly subjectPairs: (subject: string) => string;
  /** ZSET of the pairs with a known end (expiry or revocation), scored by it (ms). */
  readonly subjectEnds: (subject: string) => string;
  /** SET of the subject's active pairs (what the cap counts). */
  readonly subjectActive: (subject: string) => string;
  /** The SET index of older writers (before :pairs); read once, folded in, deleted. */
  readonly subjectLegacyKeys: (subject: string) => string;
  /** STREAM of the subject's key events (what GET /keys/events pages through). */
  readonly subjectEvents: (subject: string) => string;
  /** A web-app user's hash: password_hash, subject, created_at, scopes. */
  readonly user: (username: string) => string;
  /**
   * HASH of the portal sessions under one tag (a username's: the tag a session id carries):
   * the SHA-256 of each session's id (hex) -> the session as JSON (credentials/portal-session.ts).
   * Beside the user's hash in one slot, so that a new password or the user's removal ends its
   * sessions in the same script.
   */
  readonly sessionsAt: (tag: string) => string;
  /** The same hash named from a username: `sessionsAt(tagOf(username))`. */
  readonly sessionsOf: (username: string) => string;
  /** The fleet key every gateway checks verified records with (verified-record.ts). */
  readonly fleetKey: string;
  /**
   * A SCAN MATCH pattern of every subject's `subjectEnds` (a name it matches may be another's:
   * endsSubject tells).
   */
  readonly everySubjectEnds: string;
  /** The subject whose `subjectEnds` the name is; undefined for any other name. */
  readonly endsSubject: (name: string) => string | undefined;
  /**
   * The latest count of pairs ending soon (credentials/expiring-pairs.ts, as JSON), shared by
   * every gateway on this Redis, and the claim of the one gateway counting again.
   */
  readonly expiringCount: string;
  readonly expiringCountClaim: string;
  /**
   * The pub/sub channel of revocations (`key:<key>`, `subject:<subject>`). No hash tag: a
   * channel is no key, and a tag would pin a sharded channel to one slot.
   */
  readonly channel: string;
  /**
   * STREAM of every key event of the fleet (`keys audit`), under a fixed hash tag of its own:
   * one key, so one command reads and follows all of it, on a Cluster too. Events are few
   * (changes, not requests), so its one master carries little.
   */
  readonly auditEvents: string;
  /** A lockout counter's hash (f, p, pt, lu). */
  readonly lockoutCounter: (counter: LockoutCounter) => string;
  /** A rate-limit bucket (one number: its theoretical arrival time in µs). */
  readonly bucket: (bucket: BucketId) => string;
  /** The hash whose `rate_limit` field overrides a policy: a pair's or a subject's. */
  readonly settings: (owner: BucketOwner) => string;
}

/** `text` in a SCAN MATCH pattern, as itself (glob's `*?[]\\` escaped). */
export const globLiteral = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

export function redisLayout(
  prefix: string,
  tagOf: (text: string) => string = subjectTag,
): RedisLayout {
  const at = (tag: string): string => `${prefix}{${tag}}:`;
  const keyAt = (tag: string, id: string): string => `${at(tag)}key:${id}`;
  const subject = (name: string): string => `${at(tagOf(name))}subject:${name}`;
  // A credential in a bucket's name: `key:<key>` for a pair, `subject:<subject>` for a token;
  // either way under its subject's tag, where the pair's hash and its overrides are.
  const owned = (owner: BucketOwner): string =>
    owner.kind === 'key' ? `key:${owner.key}` : `subject:${owner.subject}`;
  const sessionsAt = (tag: string): string => `${at(tag)}sessions`;
  return {
    tagOf,
    key: (id, name) => keyAt(tagOf(name), id),
    keyAt,
    keyTag: (id) => `${prefix}key-tag:${id}`,
    subject,
    subjectPairs: (name) => `${subject(name)}:pairs`,
    subjectEnds: (name) => `${subject(name)}:ends`,
    subjectActive: (name) => `${subject(name)}:active`,
    subjectLegacyKeys: (name) => `${subject(name)}:keys`,
    subjectEvents: (name) => `${subject(name)}:events`,
    user: (username) => `${at(tagOf(username))}user:${username}`,
    sessionsAt,
    sessionsOf: (username) => sessionsAt(tagOf(username)),
    fleetKey: `${prefix}fleet-key`,
    everySubjectEnds: `${globLiteral(prefix)}{*}:subject:*:ends`,
    endsSubject(name) {
      const match = /^\{[^}]*\}:subject:(.+):ends$/s.exec(
        name.startsWith(prefix) ? name.slice(prefix.length) : '',
      );
      const named = match?.[1];
      // The tag must be the subject's own: a name that only looks like one is not its index.
      return named !== undefined && `${subject(named)}:ends` === name ? named : undefined;
    },
    expiringCount: `${prefix}expiring-pairs`,
    expiringCountClaim: `${prefix}expiring-pairs:claim`,
    channel: `${prefix}revocations`,
    // `audit` is no tag of anything: tags are hex digits.
    auditEvents: `${at('audit')}events`,
    lockoutCounter({ scope, id, network }) {
      // Keys and usernames never contain `:` (a Basic key ends at the first colon; usernames
      // are checked), so `<id>:<network>` cannot be read two ways even for an IPv6 network.
      // The address counter is the network's; the other two, one slot apart from it, the id's.
      switch (scope) {
        case 'basic_address':
          return `${at(tagOf(network))}lockout:basic:address:${network}`;
        case 'basic_key_address':
          return `${at(tagOf(id))}lockout:basic:key-address:${id}:${network}`;
        case 'basic_key':
          return `${at(tagOf(id))}lockout:basic:key:${id}`;
        case 'token_address':
          return `${at(tagOf(network))}lockout:token:address:${network}`;
        case 'token_username_address':
          return `${at(tagOf(id))}lockout:token:username-address:${id}:${network}`;
        case 'token_username':
          return `${at(tagOf(id))}lockout:token:username:${id}`;
      }
    },
    bucket(bucket) {
      switch (bucket.kind) {
        case 'credential':
          return `${at(tagOf(bucket.owner.subject))}rl:${owned(bucket.owner)}`;
        case 'subject':
          return `${at(tagOf(bucket.subject))}rl:subject-all:${bucket.subject}`;
        case 'route':
          return `${at(tagOf(bucket.owner.subject))}rl:route:${bucket.route}:${owned(bucket.owner)}`;
        case 'address':
          return `${at(tagOf(bucket.network))}rl:address:${bucket.network}`;
      }
    },
    settings: (owner) =>
      owner.kind === 'key' ? keyAt(tagOf(owner.subject), owner.key) : subject(owner.subject),
  };
}

/**
 * The names of the single-slot layout of earlier versions, where every key started with one prefix
 * holding a hash tag (`credentials.redis.singleSlotPrefix`, by default `{ag}:`): one slot for
 * everything. The gateway reads pairs and users there while they are not in the layout above yet,
 * and moves them (single-slot.ts; `migrate` moves them all). Its lockout counters and rate buckets
 * are not read: they start afresh (docs/redis-layout.md, Upgrading from the single-slot layout).
 */
export interface SingleSlotLayout extends Pick<
  RedisLayout,
  'subject' | 'subjectPairs' | 'subjectEnds' | 'subjectActive' | 'subjectLegacyKeys' | 'user'
> {
  readonly prefix: string;
  /** A pair's hash: named from the id alone, every pair being in the one slot. */
  readonly key: (key: string) => string;
}

export function singleSlotLayout(prefix: string): SingleSlotLayout {
  const subject = (name: string): string => `${prefix}subject:${name}`;
  return {
    prefix,
    key: (id) => `${prefix}key:${id}`,
    subject,
    subjectPairs: (name) => `${subject(name)}:pairs`,
    subjectEnds: (name) => `${subject(name)}:ends`,
    subjectActive: (name) => `${subject(name)}:active`,
    subjectLegacyKeys: (name) => `${subject(name)}:keys`,
    user: (username) => `${prefix}user:${username}`,
  };
}

/**
 * The hash tag Redis Cluster hashes a key name by (the Cluster specification, "Hash tags"):
 * what lies between the first `{` and the first `}` after it, when not empty; else the whole
 * name. Two names with the same answer share a slot: what the stores group a batch by.
 */
export function hashTag(name: string): string {
  const open = name.indexOf('{');
  if (open === -1) return name;
  const close = name.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? name : name.slice(open + 1, close);
}

/** One row of docs/redis-layout.md's key table: the name with placeholders, and the Redis type. */
export interface LayoutRow {
  readonly key: string;
  readonly type: 'hash' | 'zset' | 'set' | 'string' | 'stream' | 'channel';
}

/**
 * Every kind of key, formed by the functions above from placeholders (`<key>`, `<subject>`;
 * a tag shown as `tag(<subject>)`): the rows the doc's table must show, in its order.
 */
export function describeLayout(prefix = 'ag:'): readonly LayoutRow[] {
  const l = redisLayout(prefix, (text) => `tag(${text})`);
  const pair = { kind: 'key', key: '<key>', subject: '<subject>' } as const;
  const token = { kind: 'subject', subject: '<subject>' } as const;
  const counter = (scope: LockoutCounter['scope'], id: string, network: string): LayoutRow => ({
    key: l.lockoutCounter({ scope, id, network }),
    type: 'hash',
  });
  const bucket = (id: BucketId): LayoutRow => ({ key: l.bucket(id), type: 'string' });
  return [
    { key: l.key('<key>', '<subject>'), type: 'hash' },
    { key: l.keyTag('<key>'), type: 'string' },
    { key: l.subject('<subject>'), type: 'hash' },
    { key: l.subjectPairs('<subject>'), type: 'zset' },
    { key: l.subjectEnds('<subject>'), type: 'zset' },
    { key: l.subjectActive('<subject>'), type: 'set' },
    { key: l.subjectLegacyKeys('<subject>'), type: 'set' },
    { key: l.subjectEvents('<subject>'), type: 'stream' },
    { key: l.user('<username>'), type: 'hash' },
    { key: l.sessionsOf('<username>'), type: 'hash' },
    { key: l.fleetKey, type: 'string' },
    { key: l.expiringCount, type: 'string' },
    { key: l.expiringCountClaim, type: 'string' },
    { key: l.channel, type: 'channel' },
    { key: l.auditEvents, type: 'stream' },
    counter('basic_address', '', '<network>'),
    counter('basic_key_address', '<key>', '<network>'),
    counter('basic_key', '<key>', ''),
    counter('token_address', '', '<network>'),
    counter('token_username_address', '<username>', '<network>'),
    counter('token_username', '<username>', ''),
    bucket({ kind: 'credential', owner: pair }),
    bucket({ kind: 'credential', owner: token }),
    bucket({ kind: 'subject', subject: '<subject>' }),
    bucket({ kind: 'route', route: '<route>', owner: pair }),
    bucket({ kind: 'route', route: '<route>', owner: token }),
    bucket({ kind: 'address', network: '<network>' }),
  ];
}

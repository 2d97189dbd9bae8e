import type { LockoutCounter } from '../../protection/lockout.js';
import type { BucketId, BucketOwner } from '../../protection/rate-bucket-store.js';

/**
 * The Redis key layout: every key name (and so every hash tag) the gateway uses is formed
 * here and nowhere else. The web application writes the same keys, so the names are a
 * contract: the README's table (Redis key layout) is checked against describeLayout() below.
 *
 * Every name starts with `credentials.redis.keyPrefix`, by default `{ag}:`, a Cluster hash
 * tag: every key lives in one slot, so a script may change several atomically on Cluster too.
 */
export interface RedisLayout {
  /** A pair's hash: secret_hash, subject, label, status, times, scopes, rate_limit. */
  readonly key: (key: string) => string;
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
  /** A web-app user's hash: password_hash, subject, created_at, scopes. */
  readonly user: (username: string) => string;
  /** The pub/sub channel of revocations (`key:<key>`, `subject:<subject>`). */
  readonly channel: string;
  /** A lockout counter's hash (f, p, pt, lu). */
  readonly lockoutCounter: (counter: LockoutCounter) => string;
  /** A rate-limit bucket (one number: its theoretical arrival time in µs). */
  readonly bucket: (bucket: BucketId) => string;
  /** The hash whose `rate_limit` field overrides a policy: a pair's or a subject's. */
  readonly settings: (owner: BucketOwner) => string;
}

export function redisLayout(prefix: string): RedisLayout {
  const key = (id: string): string => `${prefix}key:${id}`;
  const subject = (name: string): string => `${prefix}subject:${name}`;
  // A credential in a bucket's name: `key:<key>` for a pair, `subject:<subject>` for a token.
  const owned = (owner: BucketOwner): string =>
    owner.kind === 'key' ? `key:${owner.key}` : `subject:${owner.subject}`;
  return {
    key,
    subject,
    subjectPairs: (name) => `${subject(name)}:pairs`,
    subjectEnds: (name) => `${subject(name)}:ends`,
    subjectActive: (name) => `${subject(name)}:active`,
    subjectLegacyKeys: (name) => `${subject(name)}:keys`,
    user: (username) => `${prefix}user:${username}`,
    channel: `${prefix}revocations`,
    lockoutCounter({ scope, id, network }) {
      // Keys and usernames never contain `:` (a Basic key ends at the first colon; usernames
      // are checked), so `<id>:<network>` cannot be read two ways even for an IPv6 network.
      switch (scope) {
        case 'basic_address':
          return `${prefix}lockout:basic:address:${network}`;
        case 'basic_key_address':
          return `${prefix}lockout:basic:key-address:${id}:${network}`;
        case 'basic_key':
          return `${prefix}lockout:basic:key:${id}`;
        case 'token_address':
          return `${prefix}lockout:token:address:${network}`;
        case 'token_username_address':
          return `${prefix}lockout:token:username-address:${id}:${network}`;
        case 'token_username':
          return `${prefix}lockout:token:username:${id}`;
      }
    },
    bucket(bucket) {
      switch (bucket.kind) {
        case 'credential':
          return `${prefix}rl:${owned(bucket.owner)}`;
        case 'subject':
          return `${prefix}rl:subject-all:${bucket.subject}`;
        case 'route':
          return `${prefix}rl:route:${bucket.route}:${owned(bucket.owner)}`;
        case 'address':
          return `${prefix}rl:address:${bucket.network}`;
      }
    },
    settings: (owner) => (owner.kind === 'key' ? key(owner.key) : subject(owner.subject)),
  };
}

/** One row of the README's key table: the name with placeholders, and the Redis type. */
export interface LayoutRow {
  readonly key: string;
  readonly type: 'hash' | 'zset' | 'set' | 'string' | 'channel';
}

/**
 * Every kind of key, formed by the functions above from placeholders (`<key>`, `<subject>`):
 * the rows the README's table must show, in its order.
 */
export function describeLayout(prefix = '{ag}:'): readonly LayoutRow[] {
  const l = redisLayout(prefix);
  const pair = { kind: 'key', key: '<key>' } as const;
  const token = { kind: 'subject', subject: '<subject>' } as const;
  const counter = (scope: LockoutCounter['scope'], id: string, network: string): LayoutRow => ({
    key: l.lockoutCounter({ scope, id, network }),
    type: 'hash',
  });
  const bucket = (id: BucketId): LayoutRow => ({ key: l.bucket(id), type: 'string' });
  return [
    { key: l.key('<key>'), type: 'hash' },
    { key: l.subject('<subject>'), type: 'hash' },
    { key: l.subjectPairs('<subject>'), type: 'zset' },
    { key: l.subjectEnds('<subject>'), type: 'zset' },
    { key: l.subjectActive('<subject>'), type: 'set' },
    { key: l.subjectLegacyKeys('<subject>'), type: 'set' },
    { key: l.user('<username>'), type: 'hash' },
    { key: l.channel, type: 'channel' },
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

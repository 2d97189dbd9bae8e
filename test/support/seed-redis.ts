import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { openRedisStore } from './redis-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { parseKeyId } from '../../src/identity/key-id.js';
import { redisConfig } from './redis-config.js';

/** Low cost keeps tests fast; the cost is read from each hash, so verification is unchanged. */
export const TEST_BCRYPT_COST = 4;

/** A key prefix no other test uses (no brace: keys carry their own hash tags, layout.ts). */
export function uniquePrefix(name: string): string {
  return `t${name}${process.pid}${Math.floor(Math.random() * 1e6)}:`;
}

/** A prefix of the single-slot layout of earlier versions (one hash tag) no other test uses. */
export function uniqueSingleSlotPrefix(name: string): string {
  return `{${uniquePrefix(name).slice(0, -1)}}:`;
}

/**
 * Writes a pair the way docs/redis-layout.md tells another service to (HSET + ZADD + SADD, and for
 * an id that carries no tag its `key-tag` entry), its secret hashed at TEST_BCRYPT_COST unless
 * `secretHash` gives the hash another writer made.
 */
export async function seedKey(
  redisUrl: string,
  prefix: string,
  pair: {
    key: string;
    secret: string;
    subject: string;
    label?: string;
    status?: 'active' | 'revoked';
    secretHash?: string;
    scopes?: readonly string[];
  },
): Promise<void> {
  const k = redisLayout(prefix);
  const redis = new Redis(redisUrl);
  try {
    const status = pair.status ?? 'active';
    const createdAt = new Date();
    if (parseKeyId(pair.key).kind !== 'tagged')
      await redis.set(k.keyTag(pair.key), k.tagOf(pair.subject));
    const write = redis
      .multi()
      .hset(k.key(pair.key, pair.subject), {
        secret_hash: pair.secretHash ?? (await bcrypt.hash(pair.secret, TEST_BCRYPT_COST)),
        subject: pair.subject,
        label: pair.label ?? '',
        status,
        created_at: createdAt.toISOString(),
        ...(pair.scopes === undefined ? {} : { scopes: pair.scopes.join(' ') }),
      })
      .zadd(k.subjectPairs(pair.subject), createdAt.getTime(), pair.key);
    if (status === 'active') write.sadd(k.subjectActive(pair.subject), pair.key);
    await write.exec();
  } finally {
    redis.disconnect();
  }
}

/**
 * Writes (or overwrites) a web-app user as docs/redis-layout.md tells another service to (HSET),
 * with a cost-4 bcrypt hash unless `passwordHash` gives another writer's: tests also use it to move
 * a user to another subject or change its scopes.
 */
export async function putUser(
  redisUrl: string,
  keyPrefix: string,
  user: {
    username: string;
    subject: string;
    password: string;
    passwordHash?: string;
    scopes?: readonly string[];
  },
): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    await redis.hset(redisLayout(keyPrefix).user(user.username), {
      password_hash: user.passwordHash ?? (await bcrypt.hash(user.password, TEST_BCRYPT_COST)),
      subject: user.subject,
      created_at: new Date().toISOString(),
      scopes: (user.scopes ?? []).join(' '),
    });
  } finally {
    redis.disconnect();
  }
}

/** Removes a web-app user through the gateway's own store; true when there was one. */
export async function removeUser(
  redisUrl: string,
  keyPrefix: string,
  username: string,
): Promise<boolean> {
  const store = openRedisStore(redisConfig(redisUrl, keyPrefix));
  try {
    return await store.removeUser(username);
  } finally {
    await store.close();
  }
}

/**
 * Revokes a pair as docs/redis-layout.md and the store's comment tell another service to: HSET
 * status revoked, SREM from the active set (one MULTI), then PUBLISH "key:<key>" on
 * `<prefix>revocations`.
 */
export async function revokeAsAnotherService(
  redisUrl: string,
  keyPrefix: string,
  key: string,
  subject: string,
): Promise<void> {
  const k = redisLayout(keyPrefix);
  const redis = new Redis(redisUrl);
  try {
    await redis
      .multi()
      .hset(k.key(key, subject), { status: 'revoked', revoked_at: new Date().toISOString() })
      .srem(k.subjectActive(subject), key)
      .publish(k.channel, `key:${key}`)
      .exec();
  } finally {
    redis.disconnect();
  }
}

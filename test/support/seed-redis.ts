import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/credentials/redis-store.js';

/** Low cost keeps tests fast; the cost is read from each hash, so verification is unchanged. */
export const TEST_BCRYPT_COST = 4;

export function uniquePrefix(name: string): string {
  return `{t${name}${process.pid}${Math.floor(Math.random() * 1e6)}}:`;
}

/** Writes a pair the way the README tells another service to (HSET + SADD). */
export async function seedKey(
  redisUrl: string,
  prefix: string,
  pair: {
    key: string;
    secret: string;
    subject: string;
    label?: string;
    status?: 'active' | 'revoked';
  },
): Promise<void> {
  const k = redisKeys(prefix);
  const redis = new Redis(redisUrl);
  try {
    const status = pair.status ?? 'active';
    await redis
      .multi()
      .hset(k.key(pair.key), {
        secret_hash: await bcrypt.hash(pair.secret, TEST_BCRYPT_COST),
        subject: pair.subject,
        label: pair.label ?? '',
        status,
        created_at: new Date().toISOString(),
      })
      .sadd(k.subjectKeys(pair.subject), pair.key)
      .sadd(
        status === 'active' ? k.subjectActive(pair.subject) : k.subjectKeys(pair.subject),
        pair.key,
      )
      .exec();
  } finally {
    redis.disconnect();
  }
}

export function basicHeader(key: string, secret: string): string {
  return `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;
}

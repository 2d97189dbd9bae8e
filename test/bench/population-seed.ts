// The population section's pairs. Each group of N pairs is written into Redis as
// docs/redis-layout.md's "Create a pair" says (HSET, ZADD, SADD; self-describing `ak_` ids,
// one subject per pair), with secrets of the gateway's generated form (48 base62) and genuine
// bcrypt hashes: a pool of D (secret, hash) entries hashed at each run, pair i taking entry
// i mod D (hashing 100,000 secrets at cost 10 would take most of an hour). Then each pair's
// verified record, as a gateway that had checked it would have left it, and per group a file
// of Authorization values, the hottest (Zipf rank 1) first, for the loads.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { randomBase62 } from '../../src/credentials/generate-key-pair.js';
import {
  formatVerifiedRecord,
  newFleetKeyText,
  parseFleetKey,
  type FleetKey,
} from '../../src/credentials/verified-record.js';
import { formatKeyId, KEY_ID_RANDOM_LENGTH, subjectTag } from '../../src/identity/key-id.js';
import { basicHeader } from '../support/basic-header.js';
import type { ProcessGroup } from './processes.js';
import { pairCommands, redisPipe, type RedisServer } from './targets.js';

/** The gateway's generated secrets: 48 base62 (generate-key-pair.ts), a strong secret. */
const SECRET_LENGTH = 48;

export interface PoolEntry {
  readonly secret: string;
  readonly secretHash: string;
}

/**
 * `count` new secrets and their hashes at `cost`, all asked at once: bcrypt's async hash runs
 * on libuv's thread pool (4 threads by default: every core of a machine of up to 4).
 */
export function hashPool(count: number, cost: number): Promise<PoolEntry[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const secret = randomBase62(SECRET_LENGTH);
      return { secret, secretHash: await bcrypt.hash(secret, cost) };
    }),
  );
}

export interface Population {
  readonly size: number;
  /** Pair i's key id (its subject's tag inside) and subject, and its pool entry. */
  readonly keyOf: (i: number) => string;
  readonly subjectOf: (i: number) => string;
  readonly entryOf: (i: number) => PoolEntry;
  /** One Authorization value per line, pair i on line i + 1. */
  readonly headersFile: string;
}

/** N new pairs over the pool, and their Authorization file in `dir`. */
export function makePopulation(dir: string, size: number, pool: readonly PoolEntry[]): Population {
  const subjectOf = (i: number): string => `bench-pop${size}-${i}`;
  const keys = Array.from({ length: size }, (_, i) =>
    formatKeyId(subjectTag(subjectOf(i)), randomBase62(KEY_ID_RANDOM_LENGTH)),
  );
  const at = <T>(list: readonly T[], i: number): T => {
    const value = list[i];
    if (value === undefined) throw new RangeError(`no entry ${i}`);
    return value;
  };
  const population: Population = {
    size,
    keyOf: (i) => at(keys, i),
    subjectOf,
    entryOf: (i) => at(pool, i % pool.length),
    headersFile: join(dir, `population-${size}.headers`),
  };
  const lines = keys.map((key, i) => `${basicHeader(key, population.entryOf(i).secret)}\n`);
  writeFileSync(population.headersFile, lines.join(''));
  return population;
}

function* eachPopulation<T>(
  populations: readonly Population[],
  commands: (population: Population) => Iterable<T>,
): Generator<T> {
  for (const population of populations) yield* commands(population);
}

/** Every pair of every population, as the recipe writes it (redis-cli --pipe). */
export async function writePairs(
  group: ProcessGroup,
  redis: RedisServer,
  prefix: string,
  populations: readonly Population[],
): Promise<void> {
  await redisPipe(
    group,
    redis,
    eachPopulation(populations, (p) =>
      pairCommands({
        prefix,
        keyOf: p.keyOf,
        subjectOf: p.subjectOf,
        from: 0,
        count: p.size,
        secretHash: (i) => p.entryOf(i).secretHash,
      }),
    ),
  );
}

/**
 * The fleet key the gateways on this Redis will use: made as the first gateway would make it
 * (SET NX of newFleetKeyText()), then read back (a key already there wins).
 */
export async function storeFleetKey(redis: RedisServer, prefix: string): Promise<FleetKey> {
  const client = new Redis(redis.url, { lazyConnect: true });
  try {
    await client.connect();
    const name = redisLayout(prefix).fleetKey;
    await client.set(name, newFleetKeyText(), 'NX');
    const text = await client.get(name);
    const fleet = text === null ? undefined : parseFleetKey(text);
    if (fleet === undefined) throw new Error(`${name}: no fleet key after SET NX`);
    return fleet;
  } finally {
    client.disconnect();
  }
}

/** Each pair's `verified` field: a true record (its secret does match its hash) until `endsAtMs`. */
export async function writeRecords(
  group: ProcessGroup,
  redis: RedisServer,
  prefix: string,
  populations: readonly Population[],
  fleet: FleetKey,
  endsAtMs: number,
): Promise<void> {
  const layout = redisLayout(prefix);
  await redisPipe(
    group,
    redis,
    eachPopulation(populations, function* (p) {
      for (let i = 0; i < p.size; i += 1) {
        const key = p.keyOf(i);
        const { secret, secretHash } = p.entryOf(i);
        const record = formatVerifiedRecord(fleet, { key, secret, secretHash }, endsAtMs);
        yield ['HSET', layout.key(key, p.subjectOf(i)), 'verified', record];
      }
    }),
  );
}

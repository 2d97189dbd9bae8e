// The population section (issue 25): the gateway in front of stores of 1 to 100,000 pairs
// under a Zipf load (s = 1), on each engine with verified records on and off, beside Caddy's
// basicauth holding the same accounts; then restarts under a 10,000-pair load
// (population-restart.ts). Every row has a gateway (or a Caddy) of its own: a gateway that had
// served another group's load would carry that group's cache into this one's figures. The
// pairs, their records and the loads' files are population-seed.ts's.
import { randomInt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { basicHeader } from '../support/basic-header.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import type { BenchOptions, Engine } from './options.js';
import {
  countersBetween,
  readCounters,
  startMeteredGateway,
  untilQuiet,
  type GatewayCounters,
  type MeteredGateway,
} from './population-gateways.js';
import {
  AFTER_SWITCH_SEC,
  restartNotes,
  restartRun,
  type RestartFigures,
} from './population-restart.js';
import {
  hashPool,
  makePopulation,
  storeFleetKey,
  writePairs,
  writeRecords,
  type Population,
  type PoolEntry,
} from './population-seed.js';
import { httpRequest } from './processes.js';
import {
  bcryptPerRequest,
  pairsText,
  perRequestText,
  recordChecksPerRequest,
  reportNotes,
  type RowInfo,
} from './population-report.js';
import { formatNumber } from './report.js';
import {
  STEADY_WARMUP_SEC,
  steadyNotes,
  steadyRuns,
  steadySummary,
  type SteadyFigures,
  type SteadyLoad,
} from './population-steady.js';
import { row, runRounds, type BenchContext, type Row, type SectionResult } from './scenarios.js';
import {
  redisMemoryMiB,
  startCaddy,
  startRedis,
  type RedisServer,
  type Target,
} from './targets.js';

const KEY_PREFIX = 'bench:';
const ZIPF_EXPONENT = 1;
/** The first run's seed; each further run of a row takes the next (rows in step draw alike). */
const ZIPF_SEED = 25;
/** 20 rows × 5 rounds would take the section past 10 minutes on their own. */
export const POPULATION_MAX_ROUNDS = 3;
const MAX_WARMUP_SEC = 5;
/** The end of the bench's records: what auth.basic.verifiedRecords.ttlSec gives by default. */
const RECORD_LIFE_MS = 6 * 3600 * 1000;
/** auth.basic.cache.maxEntries by default (config-schema.ts); the gateways keep it. */
const DEFAULT_CACHE_ENTRIES = 100_000;
/** Caddy's hash_cache holds this many results (caddyauth/basicauth.go). */
const CADDY_CACHE_ENTRIES = 1_000;
/** The restart rows' population (issue 25). */
export const RESTART_PAIRS = 10_000;
/** Issue 25's targets for the largest group with records, against the one-pair row. */
const TARGET = { rpsAtLeast: 0.8, p99AtMost: 2, bcryptPerRequestAtMost: 0.001 } as const;
const ENGINES = ['http-proxy-3', 'undici'] as const;

export interface PopulationSetup {
  readonly upstream: Target;
  /** Caddy's path; undefined: its rows are skipped. */
  readonly caddy: string | undefined;
  /** `serve --workers` exists: the second restart row. */
  readonly workers: boolean;
  /** The bench's gateway configuration with this engine on the Redis at this URL. */
  readonly gatewayConfig: (engine: Engine, redisUrl: string) => GatewayConfigInput;
}

/** Each row's warm-up: as long as one measured run, up to 5 s, never below --warmup. */
export function populationWarmupSec(options: BenchOptions): number {
  return Math.max(options.warmup, Math.min(MAX_WARMUP_SEC, options.duration));
}

/** What the plan needs: rows measured, rounds, and seconds spent outside measured runs. */
export function populationPlan(
  options: BenchOptions,
  caddy: boolean,
  workers: boolean,
): { rows: number; rounds: number; otherSec: number } {
  const sizes = options.populationSizes;
  const rows = sizes.length * (ENGINES.length * 2 + (caddy ? 1 : 0));
  const rounds = Math.min(options.rounds, POPULATION_MAX_ROUNDS);
  const warmupSec = populationWarmupSec(options);
  const largest = Math.max(...sizes);
  const pairs = sizes.reduce(
    (sum, n) => sum + n,
    sizes.includes(RESTART_PAIRS) ? 0 : RESTART_PAIRS,
  );
  // About 52 ms per hash at cost 10 on this machine's cores, on libuv's 4 threads at most.
  const hashSec =
    (Math.min(options.populationHashes, Math.max(largest, RESTART_PAIRS)) *
      0.052 *
      2 ** (options.bcryptCost - 10)) /
    Math.min(4, availableParallelism());
  const otherSec =
    hashSec +
    pairs / 20_000 +
    rows * (1 + warmupSec + 0.6) +
    rows * rounds * 0.3 +
    (caddy ? sizes.reduce((sum, n) => sum + n / 50_000, 0) : 0) +
    (workers ? 2 : 1) * (warmupSec + options.duration + AFTER_SWITCH_SEC + 5) +
    (sizes.length > 1 ? ENGINES.length * (STEADY_WARMUP_SEC + rounds * (options.duration + 1)) : 0);
  return { rows, rounds, otherSec };
}

/**
 * A gateway's first request, before any load, for a pair drawn at random: 200, and with
 * records on, proved by its record (gateway_bcrypt_compares_total still 0, one hit).
 */
async function verifyGateway(
  gateway: MeteredGateway,
  population: Population,
  records: boolean,
): Promise<void> {
  const i = randomInt(population.size);
  const authorization = basicHeader(population.keyOf(i), population.entryOf(i).secret);
  const answer = await httpRequest(gateway.target.url, { headers: { authorization } });
  const counters = await readCounters(gateway);
  const name = gateway.target.name;
  if (answer.status !== 200)
    throw new Error(`${name}: pair ${i} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  if (records && (counters.bcryptCompares !== 0 || counters.recordChecks.hit !== 1))
    throw new Error(
      `${name}: pair ${i} answered 200 after ${counters.bcryptCompares} bcrypt compares and ${counters.recordChecks.hit} record hits (${JSON.stringify(counters.recordChecks)}): its record did not prove it`,
    );
}

/** A row loading `population` by Zipf's law; a gateway's counters are read around each run. */
function populationRow(
  ctx: BenchContext,
  fields: { id: string; label: string; target: Target },
  population: Population,
  info: RowInfo,
  gateway: MeteredGateway | undefined,
): Row {
  let calls = 0;
  let before: GatewayCounters | undefined;
  return row({
    ...fields,
    spec: () => ({
      url: fields.target.url,
      connections: ctx.options.connections,
      seconds: ctx.options.duration,
      zipf: { file: population.headersFile, exponent: ZIPF_EXPONENT, seed: ZIPF_SEED + calls++ },
    }),
    beforeRun: async () => {
      if (gateway !== undefined) before = await readCounters(gateway);
    },
    afterRun: async (run) => {
      if (gateway !== undefined && before !== undefined) {
        const counters = countersBetween(before, await readCounters(gateway));
        info.runs.push({ round: run.round, requests: run.wrk.requests, counters });
      }
      await untilQuiet(fields.target.started.pid);
    },
  });
}

/**
 * A group's rows: a gateway per engine with records on and off, each verified on a random
 * pair before any load, and Caddy with the group's accounts (a note instead when it fails).
 */
async function startGroup(
  ctx: BenchContext,
  setup: PopulationSetup,
  redisUrl: string,
  population: Population,
  infos: Map<string, RowInfo>,
  notes: string[],
  gateways: Map<string, MeteredGateway>,
): Promise<Row[]> {
  const { group } = ctx;
  const { size } = population;
  const rows: Row[] = [];
  for (const engine of ENGINES) {
    for (const records of [true, false]) {
      const id = `pop${size}-${engine}-records-${records ? 'on' : 'off'}`;
      ctx.onNote(`population: starting gateway-${id}`);
      const config = setup.gatewayConfig(engine, redisUrl);
      const gateway = await startMeteredGateway(group, `gateway-${id}`, config, records);
      await verifyGateway(gateway, population, records);
      gateways.set(id, gateway);
      const info: RowInfo = { size, kind: engine, records, runs: [] };
      infos.set(id, info);
      const label = `${pairsText(size)}, gateway ${engine}, records ${records ? 'on' : 'off'}`;
      rows.push(
        populationRow(ctx, { id, label, target: gateway.target }, population, info, gateway),
      );
    }
  }
  if (setup.caddy === undefined) return rows;
  const id = `pop${size}-caddy`;
  try {
    ctx.onNote(`population: starting caddy with ${pairsText(size)}`);
    const accounts = Array.from({ length: size }, (_, i) => ({
      key: population.keyOf(i),
      secretHash: population.entryOf(i).secretHash,
    }));
    const caddy = await startCaddy(
      group,
      setup.caddy,
      `caddy-pop${size}`,
      setup.upstream,
      accounts,
      undefined,
    );
    const i = randomInt(size);
    const authorization = basicHeader(population.keyOf(i), population.entryOf(i).secret);
    const answer = await httpRequest(caddy.url, { headers: { authorization } });
    if (answer.status !== 200) throw new Error(`pair ${i} answered ${answer.status}`);
    const info: RowInfo = { size, kind: 'caddy', runs: [] };
    infos.set(id, info);
    const label = `${pairsText(size)}, Caddy basicauth`;
    rows.push(populationRow(ctx, { id, label, target: caddy }, population, info, undefined));
  } catch (error) {
    notes.push(`${pairsText(size)}, Caddy skipped: it did not start or answer (${String(error)})`);
  }
  return rows;
}

/** The section's Redis with every group's pairs and records, and what seeding took. */
interface Seeded {
  readonly redis: RedisServer;
  readonly pool: readonly PoolEntry[];
  readonly hashSec: number;
  readonly populationOf: (size: number) => Population;
  /** Pairs of every group, the restart's included. */
  readonly pairs: number;
  readonly memoryMiB: { empty: number; pairs: number; records: number };
}

async function seed(ctx: BenchContext): Promise<Seeded> {
  const { group, options } = ctx;
  const sizes = options.populationSizes;
  const cost = options.bcryptCost;
  ctx.onNote('population: starting Redis');
  const redis = await startRedis(group, 'redis-population');
  const empty = await redisMemoryMiB(group, redis);
  const hashes = Math.min(options.populationHashes, Math.max(...sizes, RESTART_PAIRS));
  ctx.onNote(`population: hashing ${hashes.toLocaleString('en-US')} secrets at cost ${cost}`);
  const hashFrom = performance.now();
  const pool = await hashPool(hashes, cost);
  const hashSec = (performance.now() - hashFrom) / 1000;
  ctx.onNote(`population: hashed in ${formatNumber(hashSec, 'ms')} s; writing the pairs`);
  const all = [...new Set([...sizes, RESTART_PAIRS])].map((n) =>
    makePopulation(group.dir, n, pool),
  );
  await writePairs(group, redis, KEY_PREFIX, all);
  const pairsMiB = await redisMemoryMiB(group, redis);
  const fleet = await storeFleetKey(redis, KEY_PREFIX);
  await writeRecords(group, redis, KEY_PREFIX, all, fleet, Date.now() + RECORD_LIFE_MS);
  const pairs = all.reduce((sum, p) => sum + p.size, 0);
  ctx.onNote(`population: ${pairs.toLocaleString('en-US')} pairs and their records written`);
  return {
    redis,
    pool,
    hashSec,
    populationOf: (size) => {
      const found = all.find((p) => p.size === size);
      if (found === undefined) throw new Error(`no population of ${size}`);
      return found;
    },
    pairs,
    memoryMiB: { empty, pairs: pairsMiB, records: await redisMemoryMiB(group, redis) },
  };
}

/** What the section set up, under its table. */
function setupNotes(seeded: Seeded, options: BenchOptions): string[] {
  const { pairs, pool, memoryMiB } = seeded;
  const sizes = options.populationSizes;
  const n = (value: number): string => value.toLocaleString('en-US');
  const bytesEach = (mib: number): string => formatNumber((mib * 2 ** 20) / pairs, 'int');
  return [
    `pairs: ${n(pairs)} in one Redis (${sizes.map(n).join(', ')}${sizes.includes(RESTART_PAIRS) ? '' : ` and the restart's ${n(RESTART_PAIRS)}`}), one subject each, self-describing ak_ ids, written as docs/redis-layout.md's recipe says; secrets of the gateway's form (48 base62) from ${n(pool.length)} distinct (secret, cost-${options.bcryptCost} hash) entries hashed in ${formatNumber(seeded.hashSec, 'ms')} s on libuv's thread pool, pair i taking entry i mod ${n(pool.length)}`,
    `gateways: one per row, the bench's configuration (Redis store, bcrypt cost ${options.bcryptCost}, auth.basic.cache at its defaults: ${n(DEFAULT_CACHE_ENTRIES)} entries, 60 s), the admin port on for /metrics, auth.basic.verifiedRecords.enabled on or off, the default lockout with records on, none with records off: every connection comes from 127.0.0.1, and the lockout (its counters shared in Redis by all the rows) refuses (429) once the bcrypt checks in flight from one network would reach its threshold, as ${options.connections} connections waiting on bcrypt do, in their row and in the next while they drain. Records-on rows: each pair's record written by the bench beforehand (fleet key from Redis, made with SET NX; end now + 6 h), as a fleet that has served the population leaves them; verified before the load on a random pair (200, no bcrypt run, one record hit)`,
    `Redis used_memory: ${formatNumber(memoryMiB.pairs - memoryMiB.empty, 'int')} MiB for the pairs (${bytesEach(memoryMiB.pairs - memoryMiB.empty)} B each), ${formatNumber(memoryMiB.records - memoryMiB.pairs, 'int')} MiB more for their records (${bytesEach(memoryMiB.records - memoryMiB.pairs)} B each)`,
  ];
}

const steadyLoad = (options: BenchOptions): SteadyLoad => ({
  connections: options.connections,
  seconds: options.duration,
  exponent: ZIPF_EXPONENT,
  seed: ZIPF_SEED,
});

/** Per engine, the smallest and largest groups' records-on gateways in steady state. */
async function steadyStates(
  ctx: BenchContext,
  seeded: Seeded,
  gateways: ReadonlyMap<string, MeteredGateway>,
): Promise<SteadyFigures[]> {
  const sizes = ctx.options.populationSizes;
  const smallest = sizes[0] ?? 1;
  const largest = sizes.at(-1) ?? 1;
  if (smallest === largest) return [];
  const rounds = Math.min(ctx.options.rounds, POPULATION_MAX_ROUNDS);
  const figures: SteadyFigures[] = [];
  for (const engine of ENGINES) {
    const side = (size: number) => {
      const gateway = gateways.get(`pop${size}-${engine}-records-on`);
      if (gateway === undefined) throw new Error(`no records-on gateway of ${size} on ${engine}`);
      return { gateway, population: seeded.populationOf(size) };
    };
    const pairing = { engine, base: side(smallest), large: side(largest) };
    figures.push(await steadyRuns(ctx, pairing, steadyLoad(ctx.options), rounds));
  }
  return figures;
}

/** Restarts under load (records on, undici): into one process, then into two workers. */
async function restarts(
  ctx: BenchContext,
  setup: PopulationSetup,
  seeded: Seeded,
  notes: string[],
): Promise<RestartFigures[]> {
  const restartSetup = {
    population: seeded.populationOf(RESTART_PAIRS),
    exponent: ZIPF_EXPONENT,
    seed: ZIPF_SEED,
    warmupSec: populationWarmupSec(ctx.options),
    startGateway: (name: string, flags: readonly string[]) =>
      startMeteredGateway(
        ctx.group,
        name,
        setup.gatewayConfig('undici', seeded.redis.url),
        true,
        flags,
      ),
  };
  const runs = [await restartRun(ctx, restartSetup, 'restart into a new process', [])];
  if (setup.workers)
    runs.push(await restartRun(ctx, restartSetup, 'restart into --workers 2', ['--workers', '2']));
  else notes.push('restart into --workers 2 skipped: this build has no `serve --workers`');
  return runs;
}

export async function populationSection(
  ctx: BenchContext,
  setup: PopulationSetup,
): Promise<SectionResult> {
  const { options } = ctx;
  const sizes = options.populationSizes;
  const sizesText =
    sizes.length === 1
      ? pairsText(sizes[0] ?? 1)
      : `${sizes.map((n) => n.toLocaleString('en-US')).join(' / ')} pairs`;
  const title = `population: ${sizesText} at bcrypt cost ${options.bcryptCost}, Zipf s = ${ZIPF_EXPONENT}, ${options.connections} connections; the gateway with verified records on and off, Caddy basicauth with the same accounts`;
  const seeded = await seed(ctx);
  const infos = new Map<string, RowInfo>();
  const notes: string[] = [];
  const groups: Row[][] = [];
  const gateways = new Map<string, MeteredGateway>();
  for (const size of sizes)
    groups.push(
      await startGroup(
        ctx,
        setup,
        seeded.redis.url,
        seeded.populationOf(size),
        infos,
        notes,
        gateways,
      ),
    );

  // Group by group: a row's runs 5 rows apart (about 30 s with the defaults), within the
  // process cache's 60 s TTL, as under a steady load; all 20 rows in one rotation would leave
  // each gateway idle two minutes between its runs, its cache expired at every run's start.
  const rounds = Math.min(options.rounds, POPULATION_MAX_ROUNDS);
  const warmup = populationWarmupSec(options);
  for (const groupRows of groups)
    await runRounds({ ...ctx, options: { ...options, rounds, warmup } }, 'population', groupRows);
  const steady = await steadyStates(ctx, seeded, gateways);
  const restartRuns = await restarts(ctx, setup, seeded, notes);

  const rows = groups.flat();
  const report = reportNotes({
    rows,
    infos,
    sizes,
    exponent: ZIPF_EXPONENT,
    cacheEntries: DEFAULT_CACHE_ENTRIES,
    caddyCacheEntries: CADDY_CACHE_ENTRIES,
    poolEntries: seeded.pool.length,
  });
  return {
    id: 'population',
    title,
    rows,
    columns: [
      {
        header: 'records/req',
        cell: (r) => perRequestText(recordChecksPerRequest(infos.get(r.id))),
      },
      { header: 'bcrypt/req', cell: (r) => perRequestText(bcryptPerRequest(infos.get(r.id))) },
    ],
    notes: [
      ...notes,
      ...report.notes,
      ...steadyNotes(steady, TARGET, steadyLoad(options)),
      ...setupNotes(seeded, options),
      ...restartNotes(restartRuns, RESTART_PAIRS),
    ],
    extra: {
      sizes,
      rounds,
      warmupSec: warmup,
      pool: { entries: seeded.pool.length, cost: options.bcryptCost, hashSeconds: seeded.hashSec },
      pairs: seeded.pairs,
      redisMemoryMiB: seeded.memoryMiB,
      counters: Object.fromEntries(infos),
      ...report.extra,
      steady: steady.map((f) => ({ ...f, summary: steadySummary(f) })),
      restarts: restartRuns,
    },
  };
}

// The sections: what each starts, the rows it measures with runRounds, and the notes and
// figures it reports beyond its rows (ratios, the bcrypt limit, Redis memory...).
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import bcrypt from 'bcrypt';
import { SignJWT } from 'jose';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { median } from '../support/median.js';
import { accuracySection } from './accuracy.js';
import { fleetSection } from './fleet.js';
import { parseNodeInfo } from './fleet-figures.js';
import { limitCheckMicros } from './limit-check-cost.js';
import { limitsSection, type LimitsSetup } from './limits.js';
import { errorCount, socketErrorCount, pairKey, type WrkSpec } from './measure.js';
import type { Engine, Section } from './options.js';
import { httpRequest } from './processes.js';
import { freePort } from '../support/redis-server.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { openRedisStore } from '../support/redis-store.js';
import { redisConfig } from '../support/redis-config.js';
import { failoverSection } from './failover.js';
import { populationSection } from './population.js';
import { difference, formatNumber, percentile, ratio, summarize, table } from './report.js';
import { revocationSection } from './revocation.js';
import {
  COLD_SET,
  bcryptLimit,
  coldRow,
  row,
  runRounds,
  skippedSection,
  type BenchContext,
  type Row,
  type SectionResult,
} from './scenarios.js';
import {
  issueToken,
  pairCommands,
  redisInfo,
  redisMemoryMiB,
  redisPipe,
  startBare,
  startCaddy,
  startGateway,
  startNginx,
  startRedis,
  startUpstream,
  userCommand,
  type RedisServer,
  type Target,
} from './targets.js';

const KEY_PREFIX = 'bench:';
/** auth.basic.cache.maxEntries by default (config-schema.ts). */
const DEFAULT_CACHE_ENTRIES = 100_000;
/** The pairs section's bcrypt cost: the lowest the schema allows (see docs/benchmark.md). */
const PAIRS_COST = 4;
/**
 * The pairs section's cache bound: well below the small store, so that a cycle through the
 * store in order always misses (an LRU evicts each pair long before the cycle comes back).
 */
const pairsCacheEntries = (smallStore: number): number =>
  Math.max(1, Math.min(256, Math.floor(smallStore / 4)));

export interface Tools {
  /** Paths of the optional binaries; undefined when not installed. */
  readonly caddy: string | undefined;
  readonly nginx: string | undefined;
  /** `serve --workers` exists in this build. */
  readonly workers: boolean;
  readonly versions: Record<string, string>;
  /** Rows or sections left out, each with why and how to get them. */
  readonly skipped: string[];
}

const secret = (): string => randomBytes(36).toString('base64url');

function* concat<T>(...parts: Iterable<T>[]): Generator<T> {
  for (const part of parts) yield* part;
}

/** Everything the sections share: the upstream, the main Redis, the pairs and tokens. */
interface Fixture {
  readonly upstream: Target;
  readonly cachedPair: { key: string; secret: string };
  /** The cached pair's hash at the bench's cost (Caddy is given it too). */
  readonly cachedHash: string;
  readonly coldSecret: string;
  readonly wrongSecret: string;
  readonly gatewayConfig: (
    engine: Engine,
    redis: Pick<RedisServer, 'url'>,
    overrides?: { cost?: number; cacheEntries?: number },
  ) => GatewayConfigInput;
}

export async function runSections(ctx: BenchContext, tools: Tools): Promise<SectionResult[]> {
  const { group, options } = ctx;
  const want = (s: Section): boolean => options.sections.includes(s);
  const results: SectionResult[] = [];
  // Every section but the in-process ones (heap, trace) forwards to the upstream.
  const needsUpstream = options.sections.some((s) => s !== 'heap' && s !== 'trace');
  const needsMainRedis = (
    ['cached', 'cold', 'mixed', 'workers', 'flood', 'limits', 'accuracy'] as const
  ).some(want);

  let fixture: Fixture | undefined;
  let mainRedis: RedisServer | undefined;
  const user = { username: 'bench', subject: 'bench-user', password: secret() };
  const signingKey = await generateSigningKey();
  const hsSecret = secret();
  if (needsUpstream) {
    ctx.onNote('starting the upstream');
    const upstream = await startUpstream(group);
    const cachedPair = { key: 'ak_cachedbenchpair000000001', secret: secret() };
    fixture = {
      upstream,
      cachedPair,
      cachedHash: await bcrypt.hash(cachedPair.secret, options.bcryptCost),
      coldSecret: secret(),
      wrongSecret: secret(),
      gatewayConfig: (engine, redis, overrides = {}) => ({
        upstreams: { accounts: { url: `http://127.0.0.1:${upstream.port}`, engine } },
        auth: {
          ...(overrides.cacheEntries === undefined
            ? {}
            : { basic: { cache: { maxEntries: overrides.cacheEntries } } }),
          bearer: { issuers: [{ name: 'bench-hs256', algorithms: ['HS256'], secret: hsSecret }] },
        },
        credentials: {
          store: 'redis',
          bcryptCost: overrides.cost ?? options.bcryptCost,
          redis: { url: redis.url, keyPrefix: KEY_PREFIX },
        },
        tokens: { signingKey: signingKey.pem, lifetimeSec: 86_400 },
      }),
    };
  }
  if (needsMainRedis && fixture !== undefined) {
    ctx.onNote(
      `starting Redis; seeding ${options.coldPairs.toLocaleString('en-US')} pairs, a cached pair and a user (bcrypt cost ${options.bcryptCost})`,
    );
    mainRedis = await startRedis(group, 'redis-main');
    const [pairHash, userHash] = await Promise.all([
      bcrypt.hash(fixture.coldSecret, options.bcryptCost),
      bcrypt.hash(user.password, options.bcryptCost),
    ]);
    const { key: cachedKey } = fixture.cachedPair;
    const { cachedHash } = fixture;
    await redisPipe(
      group,
      mainRedis,
      concat(
        pairCommands({
          prefix: KEY_PREFIX,
          keyOf: (i) => pairKey(COLD_SET, i),
          from: 0,
          count: options.coldPairs,
          secretHash: pairHash,
        }),
        pairCommands({
          prefix: KEY_PREFIX,
          keyOf: () => cachedKey,
          subjectOf: () => 'bench-cached',
          from: 0,
          count: 1,
          secretHash: cachedHash,
        }),
        [userCommand(KEY_PREFIX, { ...user, passwordHash: userHash })],
      ),
    );
    ctx.onNote('seeded');
  }

  const gateways = new Map<Engine, Target>();
  const gatewayOf = async (engine: Engine): Promise<Target> => {
    const known = gateways.get(engine);
    if (known !== undefined) return known;
    if (fixture === undefined || mainRedis === undefined) throw new Error('no fixture');
    ctx.onNote(`starting the gateway (engine: ${engine})`);
    const started = await startGateway(
      group,
      `gateway-${engine}`,
      fixture.gatewayConfig(engine, mainRedis),
    );
    gateways.set(engine, started);
    return started;
  };

  for (const section of options.sections) {
    if (section === 'cached' && fixture !== undefined)
      results.push(
        await cachedSection(ctx, tools, fixture, gatewayOf, user, hsSecret, (engine) => {
          if (mainRedis === undefined) throw new Error('no Redis');
          ctx.onNote(`starting the gateway without access lines (engine: ${engine})`);
          return startGateway(group, `gateway-${engine}-quiet`, {
            ...fixture.gatewayConfig(engine, mainRedis),
            logging: { requests: false },
          });
        }),
      );
    if (section === 'cold' && fixture !== undefined)
      results.push(await coldSection(ctx, fixture, await gatewayOf(options.engine)));
    if (section === 'mixed' && fixture !== undefined)
      results.push(await mixedSection(ctx, fixture, await gatewayOf(options.engine)));
    if (section === 'pairs' && fixture !== undefined)
      results.push(await pairsSection(ctx, fixture));
    if (section === 'heap') results.push(await heapSection(ctx));
    if (section === 'trace') results.push(await traceSection(ctx));
    if (section === 'workers' && fixture !== undefined && mainRedis !== undefined)
      results.push(await workersSection(ctx, tools, fixture, mainRedis));
    if ((section === 'limits' || section === 'accuracy') && fixture !== undefined && mainRedis) {
      const setup = limitsSetup(ctx, fixture, mainRedis);
      results.push(await (section === 'limits' ? limitsSection : accuracySection)(ctx, setup));
    }
    if (section === 'flood' && fixture !== undefined && mainRedis !== undefined)
      results.push(await floodSection(ctx, fixture, mainRedis));
    if (section === 'keys' && fixture !== undefined) results.push(await keysSection(ctx, fixture));
    if (section === 'failover' && fixture !== undefined)
      results.push(await failoverSection(ctx, fixture.upstream));
    if (section === 'revocation' && fixture !== undefined)
      results.push(await revocationSection(ctx, fixture.upstream));
    if (section === 'fleet' && fixture !== undefined) {
      const { gatewayConfig } = fixture;
      results.push(
        await fleetSection(ctx, {
          prefix: KEY_PREFIX,
          secret: fixture.coldSecret,
          gatewayConfig: (url) => gatewayConfig(options.engine, { url }, { cost: PAIRS_COST }),
        }),
      );
    }
    if (section === 'population' && fixture !== undefined) {
      const { gatewayConfig } = fixture;
      results.push(
        await populationSection(ctx, {
          upstream: fixture.upstream,
          caddy: tools.caddy,
          workers: tools.workers,
          gatewayConfig: (engine, url) => gatewayConfig(engine, { url }),
        }),
      );
    }
  }
  return results;
}

/** The limits and accuracy sections' gateways: the fixture's, with rate limits laid over. */
function limitsSetup(ctx: BenchContext, fixture: Fixture, redis: RedisServer): LimitsSetup {
  const { key, secret } = fixture.cachedPair;
  const config = (rateLimits: GatewayConfigInput['rateLimits']): GatewayConfigInput => ({
    ...fixture.gatewayConfig(ctx.options.engine, redis),
    ...(rateLimits === undefined ? {} : { rateLimits }),
  });
  return {
    startGateway: (name, rateLimits, extraArgs) =>
      startGateway(ctx.group, name, config(rateLimits), extraArgs),
    checkMicros: (rateLimits) =>
      limitCheckMicros(config(rateLimits), { key, subject: 'bench-cached' }),
    basicHeader: `Authorization: ${basicHeader(key, secret)}`,
    // The bucket's key as the limiter names it (src/protection/rate-limiter.ts).
    resetBucket: async () => {
      const bucket = redisLayout(KEY_PREFIX).bucket({
        kind: 'credential',
        owner: { kind: 'key', key, subject: 'bench-cached' },
      });
      await redisPipe(ctx.group, redis, [['DEL', bucket]]);
    },
    scriptCalls: async () =>
      parseNodeInfo(await redisInfo(ctx.group, redis, 'commandstats')).scriptCalls,
  };
}

async function cachedSection(
  ctx: BenchContext,
  tools: Tools,
  fixture: Fixture,
  gatewayOf: (engine: Engine) => Promise<Target>,
  user: { username: string; password: string },
  hsSecret: string,
  /** The same gateway with `logging.requests: false`: what the access line costs. */
  quietGatewayOf: (engine: Engine) => Promise<Target>,
): Promise<SectionResult> {
  const { group, options } = ctx;
  const basic = `Authorization: ${basicHeader(fixture.cachedPair.key, fixture.cachedPair.secret)}`;
  const hsToken = await new SignJWT({ sub: 'bench-hs' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('24h')
    .sign(new TextEncoder().encode(hsSecret));
  const load = (target: Target, header?: string) => (): WrkSpec => ({
    url: target.url,
    connections: options.connections,
    seconds: options.duration,
    ...(header === undefined ? {} : { header }),
  });
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const engine of ['http-proxy-3', 'undici'] as const) {
    ctx.onNote(`starting bare ${engine}`);
    const bare = await startBare(group, engine, fixture.upstream);
    rows.push(
      row({
        id: `bare-${engine}`,
        label: `bare ${engine} (no auth)`,
        target: bare,
        spec: load(bare),
      }),
    );
  }
  for (const engine of ['http-proxy-3', 'undici'] as const) {
    const gateway = await gatewayOf(engine);
    const es256 = `Authorization: ${bearerHeader(await issueToken(gateway, user.username, user.password))}`;
    const hs256 = `Authorization: ${bearerHeader(hsToken)}`;
    const bare = `bare-${engine}`;
    const credentials = [
      ['basic', 'Basic cached', basic],
      ['es256', 'Bearer ES256 (own)', es256],
      ['hs256', 'Bearer HS256 (issuer)', hs256],
    ] as const;
    for (const [id, what, header] of credentials) {
      rows.push(
        row({
          id: `gateway-${engine}-${id}`,
          label: `gateway ${engine}, ${what}`,
          target: gateway,
          bare,
          spec: load(gateway, header),
        }),
      );
    }
    const quiet = await quietGatewayOf(engine);
    rows.push(
      row({
        id: `gateway-${engine}-basic-quiet`,
        label: `gateway ${engine}, Basic cached, access line off`,
        target: quiet,
        bare,
        spec: load(quiet, basic),
      }),
    );
  }
  if (tools.caddy !== undefined) {
    const cores = availableParallelism();
    for (const procs of [1, undefined]) {
      const name = procs === undefined ? `caddy-all` : `caddy-1`;
      try {
        ctx.onNote(`starting ${name}`);
        const caddy = await startCaddy(
          group,
          tools.caddy,
          name,
          fixture.upstream,
          [{ key: fixture.cachedPair.key, secretHash: fixture.cachedHash }],
          procs,
        );
        rows.push(
          row({
            id: name,
            label: `Caddy basicauth, GOMAXPROCS=${procs ?? `${cores} (all)`}`,
            target: caddy,
            spec: load(caddy, basic),
          }),
        );
      } catch (error) {
        notes.push(`${name} skipped: it did not start (${String(error)})`);
      }
    }
  }
  if (tools.nginx !== undefined) {
    try {
      ctx.onNote('starting nginx');
      const nginx = await startNginx(group, tools.nginx, fixture.upstream);
      rows.push(
        row({
          id: 'nginx',
          label: 'nginx proxy_pass, 1 worker (no auth)',
          target: nginx,
          spec: load(nginx),
        }),
      );
    } catch (error) {
      notes.push(`nginx skipped: it did not start (${String(error)})`);
    }
  }
  await preflight(rows);
  await runRounds(ctx, 'cached', rows);

  const byId = new Map(rows.map((r) => [r.id, r]));
  const caddy1 = byId.get('caddy-1');
  const ratioRows: string[][] = [];
  const ratios: Record<string, Record<string, number>> = {};
  for (const r of rows) {
    const bare = r.bare === undefined ? undefined : byId.get(r.bare);
    if (bare === undefined) continue;
    const values = {
      cpuToBare: ratio(r, bare, 'cpuMicrosPerRequest'),
      p99ToBare: ratio(r, bare, 'p99Ms'),
      rssToBare: ratio(r, bare, 'rssPeakMiB'),
      cpuToCaddy1: caddy1 === undefined ? NaN : ratio(r, caddy1, 'cpuMicrosPerRequest'),
    };
    ratios[r.id] = values;
    ratioRows.push([
      r.label,
      formatNumber(values.cpuToBare, 'ratio'),
      formatNumber(values.p99ToBare, 'ratio'),
      formatNumber(values.rssToBare, 'ratio'),
      formatNumber(values.cpuToCaddy1, 'ratio'),
    ]);
  }
  notes.push(
    '',
    'ratios (median of the per-round ratios; CPU = CPU µs per request, lower is cheaper):',
    table(['gateway row', 'CPU/bare', 'p99/bare', 'RSS/bare', 'CPU/Caddy-1'], ratioRows),
  );
  const accessLineMicros: Record<string, number> = {};
  for (const engine of ['http-proxy-3', 'undici'] as const) {
    const on = byId.get(`gateway-${engine}-basic`);
    const off = byId.get(`gateway-${engine}-basic-quiet`);
    if (on !== undefined && off !== undefined)
      accessLineMicros[engine] = difference(on, off, 'cpuMicrosPerRequest');
  }
  notes.push(
    `the access line's cost per request, Basic cached (CPU µs on − off, median of per-round differences; target at most 5 µs): ${Object.entries(
      accessLineMicros,
    )
      .map(([engine, micros]) => `${engine} ${formatNumber(micros, 'ms')} µs`)
      .join(', ')}`,
  );
  return {
    id: 'cached',
    title: 'cached path (one pair or token, verified once)',
    rows,
    notes,
    extra: { ratios, accessLineMicros },
  };
}

/** One request per row with its own credentials before any load: a wrong setup fails fast. */
async function preflight(rows: readonly Row[]): Promise<void> {
  for (const r of rows) {
    const spec = r.spec();
    const headers: Record<string, string> = {};
    if (spec.header !== undefined) {
      const colon = spec.header.indexOf(':');
      headers[spec.header.slice(0, colon)] = spec.header.slice(colon + 1).trim();
    }
    if (spec.pairs !== undefined) {
      const p = spec.pairs;
      headers.authorization = basicHeader(pairKey(p, p.count - 1), p.secret);
    }
    const answer = await httpRequest(spec.url, { headers });
    if (answer.status !== 200)
      throw new Error(`${r.label}: the first request answered ${answer.status}: ${answer.body}`);
  }
}

async function coldSection(
  ctx: BenchContext,
  fixture: Fixture,
  gateway: Target,
): Promise<SectionResult> {
  const { options } = ctx;
  ctx.onNote(`measuring one bcrypt compare at cost ${options.bcryptCost}`);
  const limit = await bcryptLimit(options.bcryptCost);
  const cold = coldRow(
    {
      id: 'cold-basic',
      label: `gateway ${options.engine}, Basic, a new pair per request`,
      target: gateway,
    },
    {
      count: options.coldPairs,
      secret: fixture.coldSecret,
      connections: options.coldConnections,
      seconds: options.duration,
    },
  );
  await preflight([cold]);
  await runRounds(ctx, 'cold', [cold]);
  const s = summarize(cold);
  const share = (s.rps / limit.perSecond) * 100;
  const notes = [
    `bcrypt limit: ${limit.cores} cores / ${formatNumber(limit.compareMs, 'ms')} ms per compare = ${formatNumber(limit.perSecond, 'int')} checks/s; cold Basic reaches ${formatNumber(share, 'pct')} of it`,
  ];
  // A cycle that came back to its start within the cache's reach met cached pairs.
  const sent = cold.runs.reduce((n, run) => n + run.wrk.requests + options.coldConnections, 0);
  if (sent > options.coldPairs && options.coldPairs <= DEFAULT_CACHE_ENTRIES)
    notes.push(
      `warning: ${sent.toLocaleString('en-US')} requests went through ${options.coldPairs.toLocaleString('en-US')} pairs, no more than the cache holds (${DEFAULT_CACHE_ENTRIES.toLocaleString('en-US')}): some were cache hits; use more --cold-pairs`,
    );
  return {
    id: 'cold',
    title: `cold Basic (${options.coldPairs.toLocaleString('en-US')} pairs, bcrypt cost ${options.bcryptCost}, ${options.coldConnections} connections)`,
    rows: [cold],
    notes,
    extra: { bcryptLimit: limit, percentOfLimit: share },
  };
}

async function mixedSection(
  ctx: BenchContext,
  fixture: Fixture,
  gateway: Target,
): Promise<SectionResult> {
  const { options } = ctx;
  const basic = `Authorization: ${basicHeader(fixture.cachedPair.key, fixture.cachedPair.secret)}`;
  const wrongConnections = Math.max(
    1,
    Math.round((options.connections * options.wrongShare) / (100 - options.wrongShare)),
  );
  const cached = (): WrkSpec => ({
    url: gateway.url,
    connections: options.connections,
    seconds: options.duration,
    header: basic,
  });
  let start = Math.floor(Math.random() * options.coldPairs);
  const alone = row({
    id: 'mixed-alone',
    label: `gateway ${options.engine}, cached clients alone`,
    target: gateway,
    spec: cached,
  });
  const mixed = row({
    id: 'mixed-wrong',
    label: `gateway ${options.engine}, cached clients + wrong secrets`,
    target: gateway,
    spec: cached,
    companion: () => ({
      url: gateway.url,
      connections: wrongConnections,
      seconds: options.duration,
      pairs: { ...COLD_SET, count: options.coldPairs, start, secret: fixture.wrongSecret },
    }),
    afterRun: (run) => {
      start = (start + (run.companion?.requests ?? 0) + wrongConnections) % options.coldPairs;
    },
  });
  await preflight([alone]);
  await runRounds(ctx, 'mixed', [alone, mixed]);
  const companions = mixed.runs.flatMap((run) =>
    run.companion === undefined ? [] : [run.companion],
  );
  const statuses: Record<string, number> = {};
  for (const c of companions)
    for (const [status, n] of Object.entries(c.statuses))
      statuses[status] = (statuses[status] ?? 0) + n;
  const wrongRps = median(companions.map((c) => c.rps));
  const socketErrors = companions.reduce((sum, c) => sum + socketErrorCount(c), 0);
  const cachedRps = summarize(mixed).rps;
  const p99Ratio = ratio(mixed, alone, 'p99Ms');
  const rpsRatio = ratio(mixed, alone, 'rps');
  const sharePct = (wrongRps / (wrongRps + cachedRps)) * 100;
  const statusText = Object.entries(statuses)
    .map(([status, n]) => `${status}: ${n.toLocaleString('en-US')}`)
    .join(', ');
  return {
    id: 'mixed',
    title: `mixed: ${options.connections} cached clients + ${wrongConnections} sending wrong secrets (${formatNumber((wrongConnections / (wrongConnections + options.connections)) * 100, 'pct')} of clients, bcrypt cost ${options.bcryptCost})`,
    rows: [alone, mixed],
    notes: [
      `cached clients with wrong secrets beside them: p99 × ${formatNumber(p99Ratio, 'ratio')}, req/s × ${formatNumber(rpsRatio, 'ratio')} (median of per-round ratios)`,
      `wrong-secret load: ${formatNumber(wrongRps, 'int')} req/s (${formatNumber(sharePct, 'pct')} of requests answered), statuses ${statusText || 'none'}, socket errors ${socketErrors}`,
      "CPU µs/req of the mixed row: the gateway CPU over both loads' requests",
    ],
    extra: {
      wrongConnections,
      wrongRps,
      wrongStatuses: statuses,
      wrongSocketErrors: socketErrors,
      wrongSharePct: sharePct,
      p99Ratio,
      rpsRatio,
    },
  };
}

async function pairsSection(ctx: BenchContext, fixture: Fixture): Promise<SectionResult> {
  const { group, options } = ctx;
  const sizes = [
    { id: 'small', count: options.pairsSmall },
    { id: 'large', count: options.pairsLarge },
  ];
  const [pairHash, cachedHash] = await Promise.all([
    bcrypt.hash(fixture.coldSecret, PAIRS_COST),
    bcrypt.hash(fixture.cachedPair.secret, PAIRS_COST),
  ]);
  const basic = `Authorization: ${basicHeader(fixture.cachedPair.key, fixture.cachedPair.secret)}`;
  const cachedRows: Row[] = [];
  const coldRows: Row[] = [];
  const memory: Record<string, number> = {};
  for (const size of sizes) {
    const n = size.count.toLocaleString('en-US');
    ctx.onNote(`pairs: starting Redis and seeding ${n} pairs (cost ${PAIRS_COST})`);
    const redis = await startRedis(group, `redis-${size.id}`);
    const started = Date.now();
    await redisPipe(
      group,
      redis,
      concat(
        pairCommands({
          prefix: KEY_PREFIX,
          keyOf: (i) => pairKey(COLD_SET, i),
          from: 0,
          count: size.count,
          secretHash: pairHash,
        }),
        pairCommands({
          prefix: KEY_PREFIX,
          keyOf: () => fixture.cachedPair.key,
          subjectOf: () => 'bench-cached',
          from: 0,
          count: 1,
          secretHash: cachedHash,
        }),
      ),
    );
    memory[size.id] = await redisMemoryMiB(group, redis);
    ctx.onNote(
      `pairs: ${n} pairs seeded in ${((Date.now() - started) / 1000).toFixed(1)} s, Redis uses ${formatNumber(memory[size.id] ?? NaN, 'int')} MiB`,
    );
    const gateway = await startGateway(
      group,
      `gateway-pairs-${size.id}`,
      fixture.gatewayConfig(options.engine, redis, {
        cost: PAIRS_COST,
        cacheEntries: pairsCacheEntries(options.pairsSmall),
      }),
    );
    cachedRows.push(
      row({
        id: `pairs-${size.id}-cached`,
        label: `${n} pairs in Redis, Basic cached`,
        target: gateway,
        spec: () => ({
          url: gateway.url,
          connections: options.connections,
          seconds: options.duration,
          header: basic,
        }),
      }),
    );
    coldRows.push(
      coldRow(
        { id: `pairs-${size.id}-cold`, label: `${n} pairs in Redis, cold checks`, target: gateway },
        {
          count: size.count,
          secret: fixture.coldSecret,
          connections: options.coldConnections,
          seconds: options.duration,
        },
      ),
    );
  }
  const rows = [...cachedRows, ...coldRows];
  await preflight(rows);
  await runRounds(ctx, 'pairs', rows);
  const limit = await bcryptLimit(PAIRS_COST);
  const [smallCached, largeCached] = cachedRows;
  const [smallCold, largeCold] = coldRows;
  const ratios = {
    cachedRps: smallCached && largeCached ? ratio(largeCached, smallCached, 'rps') : NaN,
    coldRps: smallCold && largeCold ? ratio(largeCold, smallCold, 'rps') : NaN,
    coldCpu: smallCold && largeCold ? ratio(largeCold, smallCold, 'cpuMicrosPerRequest') : NaN,
  };
  const coldShare = (r: Row | undefined): string =>
    formatNumber(((r ? summarize(r).rps : NaN) / limit.perSecond) * 100, 'pct');
  return {
    id: 'pairs',
    title: `store size: ${options.pairsSmall.toLocaleString('en-US')} vs ${options.pairsLarge.toLocaleString('en-US')} pairs in Redis (bcrypt cost ${PAIRS_COST}, cache ${pairsCacheEntries(options.pairsSmall)} entries)`,
    rows,
    notes: [
      `large/small (median of per-round ratios): cached req/s × ${formatNumber(ratios.cachedRps, 'ratio')}, cold checks/s × ${formatNumber(ratios.coldRps, 'ratio')}, cold CPU/check × ${formatNumber(ratios.coldCpu, 'ratio')}`,
      `Redis used_memory: small ${formatNumber(memory.small ?? NaN, 'int')} MiB, large ${formatNumber(memory.large ?? NaN, 'int')} MiB`,
      `bcrypt limit at cost ${PAIRS_COST}: ${formatNumber(limit.perSecond, 'int')} checks/s (${formatNumber(limit.compareMs, 'ms')} ms per compare); cold checks reach ${coldShare(smallCold)} (small) and ${coldShare(largeCold)} (large) of it`,
    ],
    extra: { ratios, redisMemoryMiB: memory, bcryptLimit: limit },
  };
}

/** Runs one of the bench's in-process scripts in a Node of its own; its JSON line, parsed. */
async function runScript(
  ctx: BenchContext,
  name: string,
  script: string,
  args: readonly string[],
  nodeFlags: readonly string[] = [],
): Promise<unknown> {
  const hook = new URL('./resolve-hook.ts', import.meta.url).href;
  const path = new URL(script, import.meta.url).pathname;
  const child = ctx.group.start(
    name,
    process.execPath,
    [...nodeFlags, '--import', hook, path, ...args],
    {
      output: 'pipe',
    },
  );
  let out = '';
  child.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await child.exited;
  const line = out.split('\n').find((l) => l.startsWith('{'));
  if (code !== 0 || line === undefined)
    throw new Error(`${name} measurement failed (${String(code)}): ${out}`);
  return JSON.parse(line);
}

/**
 * The trace context's own cost while spans are not exported (issue 16: under 1 µs per
 * request): parse, a new span id and the outgoing traceparent, in process (trace-cost.ts).
 */
async function traceSection(ctx: BenchContext): Promise<SectionResult> {
  ctx.onNote('trace: the trace context per request, in process');
  const result = (await runScript(ctx, 'trace', './trace-cost.ts', [])) as {
    iterations: number;
    noHeaderNs: number;
    traceparentNs: number;
    withTracestateNs: number;
  };
  const ns = (value: number): string => `${formatNumber(value, 'int')} ns`;
  return {
    id: 'trace',
    title: `trace context per request, spans not exported (in process, batches of ${result.iterations.toLocaleString('en-US')})`,
    rows: [],
    notes: [
      `no traceparent (a trace started): ${ns(result.noHeaderNs)}; a traceparent continued: ${ns(result.traceparentNs)}; with a two-member tracestate: ${ns(result.withTracestateNs)} (parse, a span id for the upstream call, its traceparent; median batch)`,
    ],
    extra: { trace: result },
  };
}

async function heapSection(ctx: BenchContext): Promise<SectionResult> {
  const { options } = ctx;
  ctx.onNote(`heap: filling ${options.heapPairs.toLocaleString('en-US')} cached pairs in process`);
  // The script calls gc() before each reading.
  const result = (await runScript(
    ctx,
    'heap',
    './heap-per-credential.ts',
    [String(options.heapPairs)],
    ['--expose-gc'],
  )) as {
    bytesPerCredential: number;
    sampleHits: number;
    sampleSize: number;
    heapUsedBefore: number;
    heapUsedAfter: number;
  };
  return {
    id: 'heap',
    title: `heap per cached credential (${options.heapPairs.toLocaleString('en-US')} pairs, in process)`,
    rows: [],
    notes: [
      `${formatNumber(result.bytesPerCredential, 'int')} bytes per cached Basic pair (heapUsed ${formatNumber(result.heapUsedBefore / 2 ** 20, 'int')} → ${formatNumber(result.heapUsedAfter / 2 ** 20, 'int')} MiB after GC; ${result.sampleHits}/${result.sampleSize} sampled pairs hit the cache)`,
    ],
    extra: { heap: result },
  };
}

async function workersSection(
  ctx: BenchContext,
  tools: Tools,
  fixture: Fixture,
  redis: RedisServer,
): Promise<SectionResult> {
  const { group, options } = ctx;
  const title = `workers: serve --workers 2 against 1 (engine ${options.engine}, Basic cached)`;
  if (!tools.workers)
    return skippedSection(
      'workers',
      title,
      "this build's `serve` has no --workers option yet (`node dist/cli.js serve --help`); rerun once it has",
    );
  const basic = `Authorization: ${basicHeader(fixture.cachedPair.key, fixture.cachedPair.secret)}`;
  const rows: Row[] = [];
  for (const workers of [1, 2]) {
    ctx.onNote(`starting the gateway with --workers ${workers}`);
    const gateway = await startGateway(
      group,
      `gateway-workers-${workers}`,
      fixture.gatewayConfig(options.engine, redis),
      ['--workers', String(workers)],
    );
    rows.push(
      row({
        id: `workers-${workers}`,
        label: `gateway ${options.engine}, --workers ${workers}`,
        target: gateway,
        spec: () => ({
          url: gateway.url,
          connections: options.connections,
          seconds: options.duration,
          header: basic,
        }),
      }),
    );
  }
  await preflight(rows);
  await runRounds(ctx, 'workers', rows);
  const [one, two] = rows;
  const ratios = {
    rps: one && two ? ratio(two, one, 'rps') : NaN,
    cpu: one && two ? ratio(two, one, 'cpuMicrosPerRequest') : NaN,
    p99: one && two ? ratio(two, one, 'p99Ms') : NaN,
  };
  const processes = rows.map((r) => Math.max(0, ...r.runs.map((run) => run.processes)));
  const notes = [
    `2 workers / 1 (median of per-round ratios): req/s × ${formatNumber(ratios.rps, 'ratio')}, CPU/req × ${formatNumber(ratios.cpu, 'ratio')}, p99 × ${formatNumber(ratios.p99, 'ratio')} (CPU and RSS are the whole process tree)`,
    `processes in the measured tree: ${processes.join(' and ')}`,
  ];
  if (processes[1] !== undefined && processes[0] !== undefined && processes[1] <= processes[0])
    notes.push('(this build accepts --workers but --workers 2 ran no more processes than 1)');
  return { id: 'workers', title, rows, notes, extra: { ratios, processes } };
}

/** The flood section's shape: wrong secrets for FLOOD_KEYS keys from FLOOD_ADDRESSES addresses. */
const FLOOD_KEYS = 1_000;
const FLOOD_ADDRESSES = 8;
/**
 * The flood gateway's bcrypt cost (its dummy hash, compared for every unknown flood key):
 * the lowest, so that bcrypt could run far more compares than the lockout lets through and
 * the bound shows within a few seconds; at cost 10 bcrypt itself would be the limit.
 */
const FLOOD_COST = 4;
/** lockout.basic.address.threshold by default (config-schema.ts). */
const DEFAULT_ADDRESS_THRESHOLD = 50;

async function metricSample(adminPort: number, series: string): Promise<number> {
  const answer = await httpRequest(`http://127.0.0.1:${adminPort}/metrics`);
  for (const line of answer.body.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return 0;
}

/**
 * Wrong secrets at full speed from many keys and many addresses (the gateway trusts
 * 127.0.0.1 as a proxy, and wrk's script writes X-Forwarded-For per request) while cached
 * clients keep requesting, under the default lockout: the cached clients' latency and
 * errors, the flood's 429s per second, and how many bcrypt compares ran.
 */
async function floodSection(
  ctx: BenchContext,
  fixture: Fixture,
  redis: RedisServer,
): Promise<SectionResult> {
  const { group, options } = ctx;
  const adminPort = await freePort();
  ctx.onNote('starting the flood gateway (lockout on, trusting 127.0.0.1 as a proxy)');
  const base = fixture.gatewayConfig(options.engine, redis, { cost: FLOOD_COST });
  const gateway = await startGateway(group, 'gateway-flood', {
    ...base,
    server: { trustedProxies: ['127.0.0.1'] },
    admin: { host: '127.0.0.1', port: adminPort },
  });
  const basic = `Authorization: ${basicHeader(fixture.cachedPair.key, fixture.cachedPair.secret)}`;
  const cached = (): WrkSpec => ({
    url: gateway.url,
    connections: options.connections,
    seconds: options.duration,
    header: basic,
  });
  const floodConnections = Math.max(4, Math.round(options.connections / 4));
  const alone = row({
    id: 'flood-alone',
    label: `gateway ${options.engine}, cached clients alone`,
    target: gateway,
    spec: cached,
  });
  const flooded = row({
    id: 'flood-wrong',
    label: `gateway ${options.engine}, cached clients + flood`,
    target: gateway,
    spec: cached,
    companion: () => ({
      url: gateway.url,
      connections: floodConnections,
      seconds: options.duration,
      flood: { keys: FLOOD_KEYS, addresses: FLOOD_ADDRESSES, secret: fixture.wrongSecret },
    }),
  });
  await preflight([alone]);
  const comparesBefore = await metricSample(adminPort, 'gateway_bcrypt_compares_total');
  await runRounds(ctx, 'flood', [alone, flooded]);
  const compares =
    (await metricSample(adminPort, 'gateway_bcrypt_compares_total')) - comparesBefore;
  const limit = await bcryptLimit(FLOOD_COST);

  const floods = flooded.runs.flatMap((run) =>
    run.companion === undefined ? [] : [run.companion],
  );
  const floodSeconds = floods.reduce((sum, f) => sum + f.seconds, 0);
  const count = (status: string): number =>
    floods.reduce((sum, f) => sum + (f.statuses[status] ?? 0), 0);
  const floodRequests = floods.reduce((sum, f) => sum + f.requests, 0);
  const rejectedPerSec = floodSeconds > 0 ? count('429') / floodSeconds : NaN;
  const cachedErrors = flooded.runs.reduce((sum, run) => sum + errorCount(run.wrk), 0);
  const p50 = median(flooded.runs.map((run) => run.wrk.p50Ms));
  const p99 = median(flooded.runs.map((run) => run.wrk.p99Ms));
  const loadSeconds = floodSeconds + options.warmup;
  const bound = FLOOD_ADDRESSES * DEFAULT_ADDRESS_THRESHOLD;
  const statusText = ['401', '429', '503']
    .map((status) => `${status}: ${count(status).toLocaleString('en-US')}`)
    .join(', ');
  return {
    id: 'flood',
    title: `flood: ${options.connections} cached clients + ${floodConnections} connections of wrong secrets (${FLOOD_KEYS} keys × ${FLOOD_ADDRESSES} addresses, X-Forwarded-For), default lockout, bcrypt cost ${FLOOD_COST}`,
    rows: [alone, flooded],
    notes: [
      `cached clients under the flood: p50 ${formatNumber(p50, 'ms')} ms, p99 ${formatNumber(p99, 'ms')} ms, errors ${cachedErrors} (target: p99 < 50 ms, no errors)`,
      `flood: ${floodRequests.toLocaleString('en-US')} requests in measured runs, ${formatNumber(rejectedPerSec, 'int')} rejected (429) per second; statuses ${statusText}; socket errors ${floods.reduce((n, f) => n + socketErrorCount(f), 0)}`,
      `bcrypt compares run (gateway_bcrypt_compares_total, warm-up included): ${compares.toLocaleString('en-US')}; the lockout's bound: ${FLOOD_ADDRESSES} addresses × ${DEFAULT_ADDRESS_THRESHOLD} (basic.address.threshold) = ${bound.toLocaleString('en-US')}, plus one per lock as locks double from 1 s; bcrypt alone could have run ~${formatNumber(limit.perSecond * loadSeconds, 'int')} in those ${formatNumber(loadSeconds, 'int')} s of flood`,
    ],
    extra: {
      floodConnections,
      floodRequests,
      rejectedPerSec,
      statuses: { 401: count('401'), 429: count('429'), 503: count('503') },
      cachedP50Ms: p50,
      cachedP99Ms: p99,
      cachedErrors,
      bcryptCompares: compares,
      lockoutBound: bound,
      bcryptCapacity: limit.perSecond * loadSeconds,
    },
  };
}

/** The keys section: one subject with this many pairs, listed by GET /keys. */
const KEYS_PAIRS = 10_000;
const KEYS_SET = { prefix: 'ak_keysbench_', digits: 6 } as const;
/** Sequential listings measured per page size (after a few unmeasured ones). */
const KEYS_REQUESTS = 200;
const KEYS_WARMUP = 10;

/** Milliseconds of each of `count` sequential calls of `call`, after `warmup` unmeasured ones. */
async function timeCalls(
  count: number,
  warmup: number,
  call: () => Promise<void>,
): Promise<number[]> {
  for (let i = 0; i < warmup; i += 1) await call();
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

/**
 * GET /keys for a subject with 10,000 pairs (target: the first page in under 50 ms on a
 * local Redis): sequential listings with a cached Basic pair of the subject, first page at
 * the default limit (1,000) and at 100, and the store's own listKeys (the one script) alone.
 */
async function keysSection(ctx: BenchContext, fixture: Fixture): Promise<SectionResult> {
  const { group, options } = ctx;
  const n = KEYS_PAIRS.toLocaleString('en-US');
  ctx.onNote(`keys: starting Redis and seeding ${n} pairs of one subject (cost ${PAIRS_COST})`);
  const redis = await startRedis(group, 'redis-keys');
  const subject = 'bench-keys';
  await redisPipe(
    group,
    redis,
    pairCommands({
      prefix: KEY_PREFIX,
      keyOf: (i) => pairKey(KEYS_SET, i),
      from: 0,
      count: KEYS_PAIRS,
      secretHash: await bcrypt.hash(fixture.coldSecret, PAIRS_COST),
      subjectOf: () => subject,
    }),
  );
  const gateway = await startGateway(
    group,
    'gateway-keys',
    fixture.gatewayConfig(options.engine, redis, { cost: PAIRS_COST }),
  );
  const headers = { authorization: basicHeader(pairKey(KEYS_SET, 0), fixture.coldSecret) };
  const figures: Record<string, { p50Ms: number; p99Ms: number; maxMs: number }> = {};
  const notes: string[] = [];
  const record = (id: string, what: string, times: number[]): void => {
    const figure = {
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      maxMs: times.at(-1) ?? NaN,
    };
    figures[id] = figure;
    notes.push(
      `${what}: p50 ${formatNumber(figure.p50Ms, 'ms')} ms, p99 ${formatNumber(figure.p99Ms, 'ms')} ms, max ${formatNumber(figure.maxMs, 'ms')} ms (${KEYS_REQUESTS} sequential)`,
    );
  };
  for (const limit of [1000, 100]) {
    const url = `http://127.0.0.1:${gateway.port}/keys?limit=${limit}`;
    ctx.onNote(`keys: ${KEYS_REQUESTS} listings of the first ${limit} pairs`);
    // The envelope starts with its count: checked without parsing 250 kB inside the timing.
    const head = `{"result":"success","status":200,"meta":{"count":${limit},`;
    const times = await timeCalls(KEYS_REQUESTS, KEYS_WARMUP, async () => {
      const answer = await httpRequest(url, { headers });
      if (answer.status !== 200 || !answer.body.startsWith(head))
        throw new Error(
          `GET /keys?limit=${limit} answered ${answer.status}: ${answer.body.slice(0, 200)}`,
        );
    });
    record(`http-${limit}`, `GET /keys?limit=${limit} (first page of ${n}), whole request`, times);
  }
  const store = openRedisStore({
    ...redisConfig(redis.url, KEY_PREFIX),
    commandTimeoutMs: 5_000,
  });
  try {
    const times = await timeCalls(KEYS_REQUESTS, KEYS_WARMUP, async () => {
      if ((await store.listKeys(subject))?.length !== 1000) throw new Error('listKeys: not 1,000');
    });
    record('store-1000', `the store's listKeys of the first 1,000 alone (two EVALSHA)`, times);
  } finally {
    await store.close();
  }
  notes.push('target: the first page of a subject with 10,000 pairs in under 50 ms');
  return {
    id: 'keys',
    title: `keys: GET /keys for one subject with ${n} pairs in Redis (engine ${options.engine})`,
    rows: [],
    notes,
    extra: { pairs: KEYS_PAIRS, listings: figures },
  };
}

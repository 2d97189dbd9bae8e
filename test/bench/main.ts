// The bench: detects its tools, prints the plan and its estimated duration, starts what the
// chosen sections need, runs them, prints the table and writes the JSON. See run-bench.ts
// for the entry and README's Benchmark section for what each figure means.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, constants, cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import bcrypt from 'bcrypt';
import { SignJWT } from 'jose';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { median } from '../support/median.js';
import { socketErrorCount, writeScripts, pairKey, type WrkSpec } from './measure.js';
import {
  HELP,
  formatDuration,
  parseOptions,
  UsageError,
  type BenchOptions,
  type Engine,
  type Section,
} from './options.js';
import {
  createProcessGroup,
  findCommand,
  httpRequest,
  versionOf,
  type ProcessGroup,
} from './processes.js';
import { formatNumber, ratio, sectionJson, sectionText, summarize, table } from './report.js';
import {
  COLD_SET,
  bcryptLimit,
  coldRow,
  limitsSection,
  row,
  runRounds,
  skippedSection,
  type BenchContext,
  type Row,
  type SectionResult,
} from './scenarios.js';
import {
  CLI,
  issueToken,
  pairCommands,
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

/** Per measurement beyond its duration: starting wrk, reading /proc, the pause after it. */
const OVERHEAD_SEC = 0.6;
const KEY_PREFIX = '{bench}:';
/** The pairs section's bcrypt cost: the lowest the schema allows (see README). */
const PAIRS_COST = 4;
/** The pairs section's cache: smaller than the small store, so a cycle through it always misses. */
const PAIRS_CACHE_ENTRIES = 256;

interface Tools {
  readonly caddy: boolean;
  readonly nginx: boolean;
  /** `serve --workers` exists in this build. */
  readonly workers: boolean;
  readonly versions: Record<string, string>;
  /** Rows or sections left out, each with why and how to get them. */
  readonly skipped: string[];
}

function detectTools(options: BenchOptions): Tools {
  const want = (s: Section): boolean => options.sections.includes(s);
  const needsRedis = (['cached', 'cold', 'mixed', 'pairs', 'workers'] as const).some(want);
  const missing: string[] = [];
  if (findCommand('wrk') === undefined) missing.push('wrk (Debian/Ubuntu: apt-get install wrk)');
  if (needsRedis && findCommand('redis-server') === undefined)
    missing.push('redis-server (Debian/Ubuntu: apt-get install redis-server)');
  if (needsRedis && findCommand('redis-cli') === undefined)
    missing.push('redis-cli (Debian/Ubuntu: apt-get install redis-tools)');
  if (missing.length > 0) throw new UsageError(`the bench needs: ${missing.join('; ')}`);
  const skipped: string[] = [];
  const caddy = findCommand('caddy') !== undefined;
  const nginx = findCommand('nginx') !== undefined;
  if (want('cached') && !caddy)
    skipped.push('Caddy rows: caddy not found (Debian/Ubuntu: apt-get install caddy)');
  if (want('cached') && !nginx)
    skipped.push('nginx row: nginx not found (Debian/Ubuntu: apt-get install nginx)');
  const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' });
  const workers = `${help.stdout}${help.stderr}`.includes('--workers');
  const versions: Record<string, string> = {
    node: process.version,
    wrk: versionOf('wrk', ['--version']),
  };
  if (needsRedis) versions.redis = versionOf('redis-server', ['--version']);
  if (caddy) versions.caddy = versionOf('caddy', ['version']);
  if (nginx) versions.nginx = versionOf(findCommand('nginx') ?? 'nginx', ['-v']);
  return { caddy, nginx, workers, versions, skipped };
}

interface Plan {
  readonly measurements: number;
  readonly estimateSec: number;
  readonly lines: string[];
}

function makePlan(options: BenchOptions, tools: Tools): Plan {
  const rows: Record<Section, number> = {
    cached: 8 + (tools.caddy ? 2 : 0) + (tools.nginx ? 1 : 0),
    cold: 1,
    mixed: 2,
    pairs: 4,
    heap: 0,
    workers: tools.workers ? 2 : 0,
    limits: 0,
  };
  const warm: Record<Section, number> = { ...rows, cold: 0, pairs: 2 };
  let measurements = 0;
  let warmups = 0;
  const lines: string[] = [];
  for (const section of options.sections) {
    measurements += rows[section] * options.rounds;
    warmups += warm[section];
    if (rows[section] > 0)
      lines.push(`  ${section}: ${rows[section]} configurations × ${options.rounds} rounds`);
  }
  const want = (s: Section): boolean => options.sections.includes(s);
  const setupSec =
    10 +
    (want('pairs') ? 5 + options.pairsLarge / 50_000 : 0) +
    (want('cold') ? 3 : 0) +
    (want('heap') ? 2 + options.heapPairs / 25_000 : 0);
  const estimateSec =
    measurements * (options.duration + OVERHEAD_SEC) +
    warmups * (options.warmup + OVERHEAD_SEC) +
    setupSec;
  return { measurements, estimateSec, lines };
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
    redis: RedisServer,
    overrides?: { cost?: number; cacheEntries?: number },
  ) => GatewayConfigInput;
}

async function run(ctx: BenchContext, tools: Tools): Promise<SectionResult[]> {
  const { group, options } = ctx;
  const want = (s: Section): boolean => options.sections.includes(s);
  const results: SectionResult[] = [];
  const needsUpstream = (['cached', 'cold', 'mixed', 'pairs', 'workers'] as const).some(want);
  const needsMainRedis = (['cached', 'cold', 'mixed', 'workers'] as const).some(want);

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
      results.push(await cachedSection(ctx, tools, fixture, gatewayOf, user, hsSecret));
    if (section === 'cold' && fixture !== undefined)
      results.push(await coldSection(ctx, fixture, await gatewayOf(options.engine)));
    if (section === 'mixed' && fixture !== undefined)
      results.push(await mixedSection(ctx, fixture, await gatewayOf(options.engine)));
    if (section === 'pairs' && fixture !== undefined)
      results.push(await pairsSection(ctx, fixture));
    if (section === 'heap') results.push(await heapSection(ctx));
    if (section === 'workers' && fixture !== undefined && mainRedis !== undefined)
      results.push(await workersSection(ctx, tools, fixture, mainRedis));
    if (section === 'limits') results.push(limitsSection());
  }
  return results;
}

async function cachedSection(
  ctx: BenchContext,
  tools: Tools,
  fixture: Fixture,
  gatewayOf: (engine: Engine) => Promise<Target>,
  user: { username: string; password: string },
  hsSecret: string,
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
    rows.push(
      row({
        id: `gateway-${engine}-basic`,
        label: `gateway ${engine}, Basic cached`,
        target: gateway,
        bare,
        spec: load(gateway, basic),
      }),
      row({
        id: `gateway-${engine}-es256`,
        label: `gateway ${engine}, Bearer ES256 (own)`,
        target: gateway,
        bare,
        spec: load(gateway, es256),
      }),
      row({
        id: `gateway-${engine}-hs256`,
        label: `gateway ${engine}, Bearer HS256 (issuer)`,
        target: gateway,
        bare,
        spec: load(gateway, hs256),
      }),
    );
  }
  if (tools.caddy) {
    const cores = availableParallelism();
    for (const procs of [1, undefined]) {
      const name = procs === undefined ? `caddy-all` : `caddy-1`;
      try {
        ctx.onNote(`starting ${name}`);
        const caddy = await startCaddy(
          group,
          name,
          fixture.upstream,
          { key: fixture.cachedPair.key, secretHash: fixture.cachedHash },
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
  if (tools.nginx) {
    try {
      ctx.onNote('starting nginx');
      const nginx = await startNginx(group, fixture.upstream);
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
  return {
    id: 'cached',
    title: 'cached path (one pair or token, verified once)',
    rows,
    notes,
    extra: { ratios },
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
  return {
    id: 'cold',
    title: `cold Basic (${options.coldPairs.toLocaleString('en-US')} pairs, bcrypt cost ${options.bcryptCost}, ${options.coldConnections} connections)`,
    rows: [cold],
    notes: [
      `bcrypt limit: ${limit.cores} cores / ${formatNumber(limit.compareMs, 'ms')} ms per compare = ${formatNumber(limit.perSecond, 'int')} checks/s; cold Basic reaches ${formatNumber(share, 'pct')} of it`,
    ],
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
        cacheEntries: PAIRS_CACHE_ENTRIES,
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
    title: `store size: ${options.pairsSmall.toLocaleString('en-US')} vs ${options.pairsLarge.toLocaleString('en-US')} pairs in Redis (bcrypt cost ${PAIRS_COST}, cache ${PAIRS_CACHE_ENTRIES} entries)`,
    rows,
    notes: [
      `large/small (median of per-round ratios): cached req/s × ${formatNumber(ratios.cachedRps, 'ratio')}, cold checks/s × ${formatNumber(ratios.coldRps, 'ratio')}, cold CPU/check × ${formatNumber(ratios.coldCpu, 'ratio')}`,
      `Redis used_memory: small ${formatNumber(memory.small ?? NaN, 'int')} MiB, large ${formatNumber(memory.large ?? NaN, 'int')} MiB`,
      `bcrypt limit at cost ${PAIRS_COST}: ${formatNumber(limit.perSecond, 'int')} checks/s (${formatNumber(limit.compareMs, 'ms')} ms per compare); cold checks reach ${coldShare(smallCold)} (small) and ${coldShare(largeCold)} (large) of it`,
    ],
    extra: { ratios, redisMemoryMiB: memory, bcryptLimit: limit },
  };
}

async function heapSection(ctx: BenchContext): Promise<SectionResult> {
  const { group, options } = ctx;
  ctx.onNote(`heap: filling ${options.heapPairs.toLocaleString('en-US')} cached pairs in process`);
  const hook = new URL('./resolve-hook.ts', import.meta.url).href;
  const script = new URL('./heap-per-credential.ts', import.meta.url).pathname;
  const child = group.start(
    'heap',
    process.execPath,
    ['--expose-gc', '--import', hook, script, String(options.heapPairs)],
    { output: 'pipe' },
  );
  let out = '';
  child.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await child.exited;
  const line = out.split('\n').find((l) => l.startsWith('{'));
  if (code !== 0 || line === undefined)
    throw new Error(`heap measurement failed (${String(code)}): ${out}`);
  const result = JSON.parse(line) as {
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

export async function main(argv: readonly string[]): Promise<number> {
  let options: BenchOptions | undefined;
  let tools: Tools;
  try {
    options = parseOptions(argv);
    if (options === undefined) {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    tools = detectTools(options);
  } catch (error) {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const opts = options;
  const plan = makePlan(opts, tools);
  let interrupted: NodeJS.Signals | undefined;
  // After a signal, the steps still unwinding print nothing more.
  const log = (text: string): void => {
    if (interrupted === undefined) process.stderr.write(`${text}\n`);
  };
  log(
    `bench: ${plan.measurements} measurements of ${opts.duration} s in ${opts.rounds} interleaved rounds (${opts.connections} connections; wrk -t1; 127.0.0.1 only)`,
  );
  for (const line of plan.lines) log(line);
  for (const line of tools.skipped) log(`  skipped: ${line}`);
  if (opts.sections.includes('workers') && !tools.workers)
    log('  skipped: workers section: `serve --workers` is not in this build yet');
  log(`estimated total: about ${formatDuration(plan.estimateSec)}`);

  const group: ProcessGroup = createProcessGroup();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted !== undefined) return;
    log(
      `\nbench: ${signal}: stopping ${group.running().length} processes (PIDs ${group.running().join(' ')}) and removing ${group.dir}`,
    );
    interrupted = signal;
    void group.close().finally(() => {
      process.stderr.write(`bench: stopped everything it started; ${group.dir} removed\n`);
      process.exit(128 + constants.signals[signal]);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Last resort (an exit nobody planned): kill what is left, synchronously.
  process.on('exit', () => group.closeNow());

  const began = Date.now();
  let done = 0;
  const elapsed = (): string => formatDuration((Date.now() - began) / 1000);
  const ctx: BenchContext = {
    group,
    options: opts,
    scripts: writeScripts(group.dir),
    onNote: (text) => log(`[${elapsed()}] ${text}`),
    onRun: (section, r, runResult, rounds) => {
      done += 1;
      const left = Math.max(0, plan.measurements - done) * (opts.duration + OVERHEAD_SEC);
      const w = runResult.wrk;
      const failure = w.failure === undefined ? '' : ` — wrk failed: ${w.failure}`;
      const c = runResult.companion;
      const beside =
        c === undefined
          ? ''
          : ` (beside: ${formatNumber(c.rps, 'int')} req/s, statuses ${JSON.stringify(c.statuses)})`;
      log(
        `[${done}/${plan.measurements} ${elapsed()} elapsed, ~${formatDuration(left)} left] ${section} round ${runResult.round}/${rounds}: ${r.label}: ${formatNumber(w.rps, 'int')} req/s, p99 ${formatNumber(w.p99Ms, 'ms')} ms, ${formatNumber(runResult.cpuMicrosPerRequest, 'int')} µs/req${runResult.errors > 0 ? `, ${runResult.errors} errors (run not counted)` : ''}${beside}${failure}`,
      );
    },
  };

  const startedAt = new Date().toISOString();
  let sections: SectionResult[];
  try {
    sections = await run(ctx, tools);
  } catch (error) {
    if (interrupted !== undefined) return new Promise(() => undefined); // the signal handler exits
    log(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    log(`stopping ${group.running().length} processes and removing ${group.dir}`);
    await group.close();
    return 1;
  }
  if (interrupted !== undefined) return new Promise(() => undefined);
  await group.close();

  const header = [
    `accounts-gateway bench, ${startedAt}: ${opts.rounds} interleaved rounds × ${opts.duration} s per configuration, ${opts.connections} connections (cold: ${opts.coldConnections}), wrk -t1, 127.0.0.1`,
    `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Object.entries(
      tools.versions,
    )
      .map(([k, v]) => `${k} ${v.replace(/^.*?(\d+\.\d+(\.\d+)?).*$/, '$1')}`)
      .join(', ')}`,
    "medians of the runs without errors; CPU µs/req = the proxy process tree's user+system time / requests; RSS = peak during a run",
  ];
  const text = [
    ...header,
    ...tools.skipped.map((s) => `skipped: ${s}`),
    '',
    sections.map(sectionText).join('\n\n'),
  ].join('\n');
  const json = {
    tool: 'accounts-gateway bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    options: opts,
    machine: {
      cores: availableParallelism(),
      cpu: cpus()[0]?.model,
      platform: process.platform,
      tmpdir: tmpdir(),
    },
    versions: tools.versions,
    skipped: tools.skipped,
    sections: sections.map(sectionJson),
  };
  mkdirSync(dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`${text}\n\nJSON: ${opts.json}\n`);
  log(
    `bench: done in ${elapsed()}; every process it started is stopped, ${join(group.dir)} removed`,
  );
  return 0;
}

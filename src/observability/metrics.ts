import {
  AggregatorRegistry,
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type Metric,
  type MetricObjectWithValues,
  type MetricValue,
  type MetricValueWithName,
} from 'prom-client';
import type { CacheCounters } from '../identity/cache-counters.js';
import type { FetchCounters } from '../identity/fetch-counters.js';
import { UPSTREAM_ERROR_KINDS, type UpstreamErrorKind } from '../errors/upstream-error-kind.js';
import { buildVersion } from './build-version.js';

/** What the admin port's /metrics needs: one process's metrics, or a set's. */
export interface MetricsSource {
  readonly contentType: string;
  /** The Prometheus text exposition. */
  scrape(): Promise<string>;
}

/**
 * One process's metrics as plain JSON (prom-client's getMetricsAsJSON), each carrying how it
 * is combined across processes: what a worker hands the primary of `serve --workers`.
 */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** The credential caches, one per authentication method. */
export type CacheMethod = 'basic' | 'bearer';
const METHODS: readonly CacheMethod[] = ['basic', 'bearer'];

/** What the gateway reads only when scraped: state it already keeps for itself. */
export interface ScrapedState {
  /** Client connections open on the API port. */
  openConnections(): number;
  /** Entries in the credential cache of `method` (of the running configuration). */
  cacheEntries(method: CacheMethod): number;
  /** This process's connection to each Redis node (a Redis store only). */
  redisConnections?(): readonly RedisConnectionState[];
  /** When the key set in use of each issuer with a JWKS URL was fetched (none yet: absent). */
  jwksFetchedAt?(): readonly JwksKeySetTime[];
  /** The bcrypt bound of the running configuration: runs under way, and waiting. */
  bcryptWork?(): { readonly running: number; readonly queued: number };
}

/** backends/backend.ts's shape, read here without importing a store. */
export interface RedisConnectionState {
  readonly node: string;
  readonly role: string;
  readonly up: boolean;
}

export interface JwksKeySetTime {
  /** The issuer's label: its `issuer`, or its `name` when it has none. */
  readonly issuer: string;
  /** Milliseconds since the epoch. */
  readonly fetchedAtMs: number;
}

export type ReloadOutcome = 'applied' | 'refused';

/** The reload counters of the process that decides reloads (one gateway, or a primary). */
export interface ConfigReloads {
  count(outcome: ReloadOutcome): void;
}

export interface GatewayMetrics extends MetricsSource {
  readonly registry: Registry;
  /** Counters of the credential cache of `method`, kept across reloads (caches are not). */
  readonly cache: Readonly<Record<CacheMethod, CacheCounters>>;
  /** A request authenticated (cache hits included), by method. */
  countAuthSuccess(method: CacheMethod): void;
  /** The JWKS fetch counters of `issuer` (its label), kept across reloads (key sources are not). */
  jwksFetches(issuer: string): FetchCounters;
  /** Where the scrape-time gauges read from; until then they read 0. */
  readFrom(state: ScrapedState): void;
  /** Reloads, when this process decides them (absent in a worker: its primary counts them). */
  readonly reloads: ConfigReloads | undefined;
  /** gateway_ready: set at every change (store connection, drain), never by a request. */
  setReady(ready: boolean): void;
  /** `source`: who produced the status, the gateway itself or the upstream (Kong's `source`). */
  observeRequest(route: string, status: number, seconds: number, source?: StatusSource): void;
  /** The metrics of the upstream named `name`, bound once (by each forwarder made for it). */
  upstream(name: string): UpstreamMetrics;
  /** A request refused with 429 by a rate-limit policy (credential, subject, route, address). */
  countRateLimited(policy: string): void;
  /** A request a shadow limit would have refused (it went on). */
  countRateLimitShadowed(policy: string): void;
  /** A rate-limit check the store did not answer (then failed open or closed). */
  countRateLimitStoreError(): void;
  snapshot(): Promise<MetricsSnapshot>;
  /** A refused credential check (`scheme`: basic or token), by why. */
  countAuthFailure(scheme: string, reason: string): void;
  /** A lock started by a failure, and a request refused by one, by counter scope. */
  countLockout(scope: string): void;
  countLockoutRefusal(scope: string): void;
  /** One bcrypt compare run (a secret or password checked against a hash). */
  countBcryptCompare(): void;
  /** A bcrypt run refused because its queue was full (a 503 `overloaded`). */
  countBcryptRefusal(): void;
  /** A stored hash rewritten at the configured cost after a successful check, or not, by why. */
  countBcryptRehash(kind: string, outcome: string): void;
  /** A pair's verified record checked instead of bcrypt, by result (hit, absent, ended...). */
  countVerifiedRecordCheck(result: string): void;
  /** A verified record written after bcrypt or renewed by a hit, or not, by result. */
  countVerifiedRecordWrite(result: string): void;
  /** A Redis breaker opened or closed (`target`: the address, or a Cluster master's host:port). */
  setRedisBreaker(target: string, open: boolean): void;
  /** A call sent to Redis settled (answered or failed) `seconds` after it was sent. */
  observeRedisCall(seconds: number): void;
  /** A revocation applied in this process, `seconds` after it was published (its message's time). */
  observeRevocationLag(seconds: number): void;
  /** The revocation subscription stood again after a loss, and the cache was flushed. */
  countRevocationResubscribe(): void;
  /** A key event that could not be appended to the audit trail (its change was made). */
  countAuditWriteFailure(): void;
  /** The listener serves a certificate expiring at `notAfterSec` (Unix seconds). */
  setTlsCertificateNotAfter(notAfterSec: number): void;
  /** A reload of the listener's certificate, by outcome (loaded, refused). */
  countTlsReload(outcome: 'loaded' | 'refused'): void;
  /**
   * The store's usable pairs ending within each window (`7d`, `30d`: the label), from its
   * latest count; undefined: no count recent enough to show (the series go).
   */
  setPairsExpiring(within: Readonly<Record<string, number>> | undefined): void;
}

export type StatusSource = 'gateway' | 'upstream';

/** One upstream's series, bound once: what a forwarding engine records (its UpstreamObserver). */
export interface UpstreamMetrics {
  observe(seconds: number): void;
  countError(kind: UpstreamErrorKind): void;
}

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

interface DurationStats {
  /** Per bucket (non-cumulative); the last slot counts what is above every bound. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface RouteStats extends DurationStats {
  /** Requests per status code, by who produced it. */
  readonly statuses: Readonly<Record<StatusSource, Map<number, number>>>;
}

interface UpstreamStats extends DurationStats {
  readonly errors: Record<UpstreamErrorKind, number>;
}

/**
 * Redis calls: a round trip on a local network takes well under a millisecond, below the
 * first bucket of a request's, so these start at 0.1 ms; past 1 s a call has met the command
 * timeout (300 ms by default) anyway.
 */
const REDIS_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
] as const;

const newDurationStats = (bounds: readonly number[] = BUCKETS): DurationStats => ({
  buckets: new Float64Array(bounds.length + 1),
  sum: 0,
  count: 0,
});

function observeDuration(
  stats: DurationStats,
  seconds: number,
  bounds: readonly number[] = BUCKETS,
): void {
  let bucket = 0;
  while (bucket < bounds.length && seconds > (bounds[bucket] ?? Infinity)) bucket += 1;
  stats.buckets[bucket] = (stats.buckets[bucket] ?? 0) + 1;
  stats.sum += seconds;
  stats.count += 1;
}

/**
 * A plain-array histogram's series, cumulative as Prometheus reads them, for one label (each
 * key of `series` a value of it; '' for a histogram without a label).
 */
function histogramValues(
  name: string,
  label: string,
  series: ReadonlyMap<string, DurationStats>,
  bounds: readonly number[] = BUCKETS,
): ScrapedValue[] {
  const values: ScrapedValue[] = [];
  for (const [value, stats] of series) {
    const labels = label === '' ? {} : { [label]: value };
    let cumulative = 0;
    bounds.forEach((bound, i) => {
      cumulative += stats.buckets[i] ?? 0;
      values.push({
        metricName: `${name}_bucket`,
        value: cumulative,
        labels: { le: bound, ...labels },
      });
    });
    values.push({
      metricName: `${name}_bucket`,
      value: stats.count,
      labels: { le: '+Inf', ...labels },
    });
    values.push({ metricName: `${name}_sum`, value: stats.sum, labels });
    values.push({ metricName: `${name}_count`, value: stats.count, labels });
  }
  return values;
}

/**
 * Request counts and durations are kept in plain counters and handed to prom-client only
 * when /metrics is scraped: prom-client's own observe() validates and hashes its labels on
 * every call, a cost paid on every request for a value read once per scrape.
 */
export function createMetrics(
  options: { countReloads: boolean; now?: () => number; tls?: boolean } = { countReloads: true },
): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const ready = readyGauge(registry);
  buildInfo(registry);
  const reloads = options.countReloads ? createConfigReloads(registry, options.now) : undefined;
  const cache: Record<CacheMethod, CacheCounters> = {
    basic: { hits: 0, misses: 0, evictions: 0 },
    bearer: { hits: 0, misses: 0, evictions: 0 },
  };
  const authSuccesses: Record<CacheMethod, number> = { basic: 0, bearer: 0 };
  let state: ScrapedState = { openConnections: () => 0, cacheEntries: () => 0 };
  const perMethod = (read: (method: CacheMethod) => number) => (): ScrapedValue[] =>
    METHODS.map((method) => ({ value: read(method), labels: { method } }));
  const cacheCounter = (name: keyof CacheCounters, help: string): void =>
    registerScraped(
      registry,
      `gateway_credential_cache_${name}_total`,
      help,
      'counter',
      perMethod((method) => cache[method][name]),
    );
  cacheCounter(
    'hits',
    'Requests whose credentials the cache had verified, by method (basic, bearer).',
  );
  cacheCounter(
    'misses',
    'Credentials looked up in the cache and not found there (then checked in full), by method.',
  );
  cacheCounter(
    'evictions',
    'Cache entries pushed out by its bound (auth.<method>.cache.maxEntries, or the bytes of cached tokens) to make room, by method; expired and revoked ones are not counted.',
  );
  registerScraped(
    registry,
    'gateway_credential_cache_entries',
    'Entries in the credential cache, by method; across workers, the sum (each has its own cache).',
    'gauge',
    perMethod((method) => state.cacheEntries(method)),
  );
  registerScraped(
    registry,
    'gateway_auth_successes_total',
    'Requests authenticated, cache hits included, by method (basic, bearer).',
    'counter',
    perMethod((method) => authSuccesses[method]),
  );
  registerScraped(
    registry,
    'gateway_open_connections',
    'Client connections open on the API port (over TLS, once the handshake is done); across workers, the sum.',
    'gauge',
    () => [{ value: state.openConnections(), labels: {} }],
  );
  registerScraped(
    registry,
    'gateway_redis_connection_up',
    "1 while this process's connection to the Redis node is ready, else 0, by node (host:port) and role (master, replica, standalone); across workers, the minimum: a node is up only when every worker reaches it.",
    'gauge',
    () =>
      (state.redisConnections?.() ?? []).map(({ node, role, up }) => ({
        value: up ? 1 : 0,
        labels: { node, role },
      })),
    'min',
  );
  const jwks = jwksFamilies(registry, () => state, options.now ?? Date.now);
  const routes = new Map<string, RouteStats>();
  const rateLimited = new Counter({
    name: 'gateway_rate_limited_total',
    help: 'Requests refused with 429 by a rate limit, by policy (credential, subject, route, address).',
    labelNames: ['policy'],
    registers: [registry],
  });
  const rateLimitShadowed = new Counter({
    name: 'gateway_rate_limit_shadow_refusals_total',
    help: 'Requests a shadow rate limit would have refused (they went on), by policy.',
    labelNames: ['policy'],
    registers: [registry],
  });
  const rateLimitStoreErrors = new Counter({
    name: 'gateway_rate_limit_store_errors_total',
    help: 'Rate-limit checks the store did not answer (failed open or closed per rateLimits.onStoreError).',
    registers: [registry],
  });
  // Off the hot path (a failure costs a bcrypt compare anyway): prom-client's own counters.
  const authFailures = new Counter({
    name: 'gateway_auth_failures_total',
    help: 'Credential checks refused, by scheme (basic, token) and reason.',
    labelNames: ['scheme', 'reason'],
    registers: [registry],
  });
  const lockouts = new Counter({
    name: 'gateway_lockouts_total',
    help: 'Locks started by failed attempts, by counter scope.',
    labelNames: ['scope'],
    registers: [registry],
  });
  const lockoutRefusals = new Counter({
    name: 'gateway_lockout_refusals_total',
    help: 'Attempts refused with 429 while locked out, by counter scope.',
    labelNames: ['scope'],
    registers: [registry],
  });
  const bcryptCompares = new Counter({
    name: 'gateway_bcrypt_compares_total',
    help: 'bcrypt compares run (Basic checks and password exchanges).',
    registers: [registry],
  });
  const bcryptRefusals = new Counter({
    name: 'gateway_bcrypt_refusals_total',
    help: 'bcrypt runs refused at once because auth.basic.maxQueuedHashes already waited (answered 503 overloaded).',
    registers: [registry],
  });
  const bcryptWork = (read: (work: { running: number; queued: number }) => number) => () => {
    const work = state.bcryptWork?.();
    return work === undefined ? [] : [{ value: read(work), labels: {} }];
  };
  registerScraped(
    registry,
    'gateway_bcrypt_in_flight',
    'bcrypt runs under way (at most auth.basic.maxConcurrentHashes); across workers, the sum.',
    'gauge',
    bcryptWork((work) => work.running),
  );
  registerScraped(
    registry,
    'gateway_bcrypt_queued',
    'bcrypt runs waiting for one under way to end (at most auth.basic.maxQueuedHashes); across workers, the sum.',
    'gauge',
    bcryptWork((work) => work.queued),
  );
  const bcryptRehashes = new Counter({
    name: 'gateway_bcrypt_rehashes_total',
    help: 'Stored bcrypt hashes of another cost or variant rehashed after a successful check, by kind (key, user) and outcome (written; superseded: changed meanwhile, left as it was; failed: not written, retried on the next success).',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  const recordChecks = new Counter({
    name: 'gateway_verified_record_checks_total',
    help: 'Verified records checked on a cache miss for a strong secret, by result (hit: proved the pair, no bcrypt run; absent; ended; other_key: made under another fleet key; refused: a live record that does not prove the pair, e.g. a wrong secret). Every result but hit goes on to bcrypt.',
    labelNames: ['result'],
    registers: [registry],
  });
  const recordWrites = new Counter({
    name: 'gateway_verified_record_writes_total',
    help: 'Verified records written, by result (written: after a bcrypt run; renewed: by a hit past half its life; superseded: the pair changed meanwhile, nothing written; failed: the store did not answer).',
    labelNames: ['result'],
    registers: [registry],
  });
  const breakerOpen = new Gauge({
    name: 'gateway_redis_breaker_open',
    help: '1 while the breaker of this Redis target (the address, or a Cluster master) refuses calls, 0 once closed; across workers, 1 when any has it open.',
    labelNames: ['target'],
    registers: [registry],
    aggregator: 'max',
  });
  const breakerTransitions = new Counter({
    name: 'gateway_redis_breaker_transitions_total',
    help: 'Redis breakers opened and closed, by target and state (open, closed).',
    labelNames: ['target', 'state'],
    registers: [registry],
  });

  // One series, no label: what a label would tell (the master, the command) is the slow log's.
  const redisCalls = new Map<string, DurationStats>();
  const redisCallStats = newDurationStats(REDIS_BUCKETS);
  registerScraped(
    registry,
    'gateway_redis_call_duration_seconds',
    'Time from sending a call to Redis (a command or a script, through the breaker) to its answer or failure, every node; calls a breaker refused were not sent and are not here.',
    'histogram',
    () => histogramValues('gateway_redis_call_duration_seconds', '', redisCalls, REDIS_BUCKETS),
  );

  // Revocations are rare: prom-client's own histogram costs nothing that matters here.
  const revocationLag = new Histogram({
    name: 'gateway_revocation_lag_seconds',
    help: 'Time from the publication of a revocation (the time in its message) to its eviction from this process; messages without a time are not counted.',
    buckets: [...BUCKETS],
    registers: [registry],
  });
  const revocationResubscribes = new Counter({
    name: 'gateway_revocation_resubscribes_total',
    help: 'Times the revocation subscription stood again after it was lost; each flushed the verified-credential cache.',
    registers: [registry],
  });
  const auditWriteFailures = new Counter({
    name: 'gateway_audit_write_failures_total',
    help: 'Key events (pair and user changes) that could not be appended to the audit trail; each change was made, and its event logged instead.',
    registers: [registry],
  });

  // Only with server.tls: a not-after of 0 on a plain-HTTP gateway would read as a
  // certificate expired in 1970 and fire every expiry alert.
  const tls = options.tls === true ? tlsMetrics(registry) : undefined;

  registerScraped(
    registry,
    'gateway_requests_total',
    'Requests answered, by route, status and source: who produced the status, the upstream (its response, passed on) or the gateway (its own answer, a refusal or an upstream failure).',
    'counter',
    () => {
      const values: ScrapedValue[] = [];
      for (const [route, stats] of routes) {
        for (const source of SOURCES)
          for (const [status, count] of stats.statuses[source])
            values.push({ value: count, labels: { route, status, source } });
      }
      return values;
    },
  );
  registerScraped(
    registry,
    'gateway_request_duration_seconds',
    'Time from request to response end, by route.',
    'histogram',
    () => histogramValues('gateway_request_duration_seconds', 'route', routes),
  );
  let pairsExpiring: Readonly<Record<string, number>> | undefined;
  registerScraped(
    registry,
    'gateway_pairs_expiring',
    "Usable key pairs of every subject on the store whose expiry comes within 7 or 30 days (`within`; the 30d count includes the 7d one), as the store's latest count (keys.expiringCountIntervalSec; on Redis one gateway counts for all); absent until a count; across workers, the maximum.",
    'gauge',
    () =>
      Object.entries(pairsExpiring ?? {}).map(([within, value]) => ({ value, labels: { within } })),
    // Every worker shows the same count of one store: a sum would multiply it.
    'max',
  );
  const upstreams = new Map<string, UpstreamStats>();
  registerScraped(
    registry,
    'gateway_upstream_request_duration_seconds',
    'Time from handing a request to the upstream to the end of its response, by upstream (its configured name); failed exchanges are counted in gateway_upstream_errors_total instead.',
    'histogram',
    () => histogramValues('gateway_upstream_request_duration_seconds', 'upstream', upstreams),
  );
  registerScraped(
    registry,
    'gateway_upstream_errors_total',
    'Upstream exchanges that failed, by upstream and kind (connect_refused, connect_timeout, timeout, reset, tls, other).',
    'counter',
    () => {
      const values: ScrapedValue[] = [];
      for (const [upstream, stats] of upstreams)
        for (const kind of UPSTREAM_ERROR_KINDS)
          values.push({ value: stats.errors[kind], labels: { upstream, kind } });
      return values;
    },
  );

  return {
    registry,
    cache,
    reloads,
    countAuthSuccess(method) {
      authSuccesses[method] += 1;
    },
    jwksFetches: jwks,
    readFrom(next) {
      state = next;
    },
    contentType: registry.contentType,
    scrape: () => registry.metrics(),
    snapshot: () => registry.getMetricsAsJSON(),
    observeRequest(route, status, seconds, source = 'gateway') {
      let stats = routes.get(route);
      if (stats === undefined) {
        stats = { ...newDurationStats(), statuses: { gateway: new Map(), upstream: new Map() } };
        routes.set(route, stats);
      }
      observeDuration(stats, seconds);
      const statuses = stats.statuses[source];
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    },
    upstream(name) {
      let stats = upstreams.get(name);
      if (stats === undefined) {
        const errors = Object.fromEntries(UPSTREAM_ERROR_KINDS.map((kind) => [kind, 0]));
        stats = { ...newDurationStats(), errors: errors as Record<UpstreamErrorKind, number> };
        upstreams.set(name, stats);
      }
      const bound = stats;
      return {
        observe: (seconds) => observeDuration(bound, seconds),
        countError: (kind) => {
          bound.errors[kind] += 1;
        },
      };
    },
    setReady(value) {
      ready.set(value ? 1 : 0);
    },
    countRateLimited(policy) {
      rateLimited.inc({ policy });
    },
    countRateLimitShadowed(policy) {
      rateLimitShadowed.inc({ policy });
    },
    countRateLimitStoreError() {
      rateLimitStoreErrors.inc();
    },
    countAuthFailure: (scheme, reason) => authFailures.inc({ scheme, reason }),
    countLockout: (scope) => lockouts.inc({ scope }),
    countLockoutRefusal: (scope) => lockoutRefusals.inc({ scope }),
    countBcryptCompare: () => bcryptCompares.inc(),
    countBcryptRefusal: () => bcryptRefusals.inc(),
    countBcryptRehash: (kind, outcome) => bcryptRehashes.inc({ kind, outcome }),
    countVerifiedRecordCheck: (result) => recordChecks.inc({ result }),
    countVerifiedRecordWrite: (result) => recordWrites.inc({ result }),
    setRedisBreaker(target, open) {
      breakerOpen.set({ target }, open ? 1 : 0);
      breakerTransitions.inc({ target, state: open ? 'open' : 'closed' });
    },
    observeRedisCall(seconds) {
      if (redisCalls.size === 0) redisCalls.set('', redisCallStats);
      observeDuration(redisCallStats, seconds, REDIS_BUCKETS);
    },
    observeRevocationLag: (seconds) => revocationLag.observe(seconds),
    countRevocationResubscribe: () => revocationResubscribes.inc(),
    countAuditWriteFailure: () => auditWriteFailures.inc(),
    setTlsCertificateNotAfter: (notAfterSec) => tls?.notAfter.set(notAfterSec),
    countTlsReload: (outcome) => tls?.reloads.inc({ outcome }),
    setPairsExpiring(within) {
      pairsExpiring = within;
    },
  };
}

function tlsMetrics(registry: Registry): { notAfter: Gauge; reloads: Counter } {
  const notAfter = new Gauge({
    name: 'gateway_tls_certificate_not_after_seconds',
    help: "The not-after (Unix seconds) of the API port's TLS certificate; across workers, the earliest: a worker still serving an older certificate is what an expiry alert must see.",
    registers: [registry],
    aggregator: 'min',
  });
  const reloads = new Counter({
    name: 'gateway_tls_reloads_total',
    help: 'Certificates of the API port read again (SIGHUP or a change of the files), by outcome: loaded, or refused (the served one stays).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return { notAfter, reloads };
}

function readyGauge(registry: Registry): Gauge {
  return new Gauge({
    name: 'gateway_ready',
    help: '1 when the gateway can serve; 0 when its store is not connected or it is draining.',
    registers: [registry],
    // Across the workers of one gateway: 1 only when every one of them is ready.
    aggregator: 'min',
  });
}

/**
 * gateway_build_info: one series set to 1, its labels saying what runs. Across workers the
 * maximum: every worker runs the same build, so the set shows one series at 1, not a sum.
 */
function buildInfo(registry: Registry): void {
  new Gauge({
    name: 'gateway_build_info',
    help: 'Always 1; its labels are the gateway version (package.json) and the Node.js version.',
    labelNames: ['version', 'node'],
    registers: [registry],
    aggregator: 'max',
  }).set({ version: buildVersion(), node: process.versions.node }, 1);
}

/**
 * Reloads and the time of the last good one, counted by the one process that decides them
 * (a gateway, or the primary of workers), so no sum across workers multiplies them. The
 * time starts at the start: the configuration read then is the first one applied.
 */
function createConfigReloads(registry: Registry, now: () => number = Date.now): ConfigReloads {
  const total = new Counter({
    name: 'gateway_config_reloads_total',
    help: 'Configuration reloads (SIGHUP), by outcome: applied, or refused (the running configuration stays).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'gateway_config_last_reload_success_timestamp_seconds',
    help: 'When the running configuration was applied (Unix seconds): the last applied reload, or the start.',
    registers: [registry],
    aggregator: 'max',
  });
  // Both outcomes shown from the start, at 0: an alert on refusals needs the series to exist.
  total.inc({ outcome: 'applied' }, 0);
  total.inc({ outcome: 'refused' }, 0);
  lastSuccess.set(now() / 1000);
  return {
    count(outcome) {
      total.inc({ outcome });
      if (outcome === 'applied') lastSuccess.set(now() / 1000);
    },
  };
}

/** A primary's own reload metrics, in a registry createAggregatedMetrics adds to the set's. */
export function createSetReloads(now?: () => number): {
  readonly reloads: ConfigReloads;
  readonly registry: Registry;
} {
  const registry = new Registry();
  return { reloads: createConfigReloads(registry, now), registry };
}

/**
 * The metrics of a set of processes, each metric combined by its own aggregator (sums for
 * the request counters and histograms, the minimum for gateway_ready). `collect` gathers one
 * snapshot per process at each scrape; `setReady` is whether the set itself can serve (every
 * process in place, not draining), combined with each process's own gateway_ready. `own`
 * holds what the set's primary counts itself (its reloads).
 */
export function createAggregatedMetrics(
  collect: () => Promise<MetricsSnapshot[]>,
  setReady: () => boolean,
  own: Registry = new Registry(),
): MetricsSource {
  const ready = readyGauge(own);
  return {
    contentType: AggregatorRegistry.PROMETHEUS_CONTENT_TYPE,
    scrape: async () => {
      ready.set(setReady() ? 1 : 0);
      const snapshots = await collect();
      return AggregatorRegistry.aggregate([...snapshots, await own.getMetricsAsJSON()]).metrics();
    },
  };
}

type ScrapedValue = MetricValueWithName<string>;

const SOURCES: readonly StatusSource[] = ['gateway', 'upstream'];

/**
 * JWKS fetches and failures per issuer, by Prometheus's convention for failures (a total
 * and a `_failures_total` beside it, as its own rule evaluations: the ratio is one division),
 * and the age of each issuer's key set in use, computed at scrape. Returns the counters of
 * an issuer, made at its first call; an issuer configured gets its series at 0 from then on.
 */
function jwksFamilies(
  registry: Registry,
  state: () => ScrapedState,
  now: () => number,
): (issuer: string) => FetchCounters {
  const issuers = new Map<string, FetchCounters>();
  const perIssuer = (name: keyof FetchCounters) => (): ScrapedValue[] =>
    [...issuers].map(([issuer, counters]) => ({ value: counters[name], labels: { issuer } }));
  registerScraped(
    registry,
    'gateway_jwks_fetches_total',
    'Fetches of a JWKS (auth.bearer.issuers[].jwksUrl), failed ones included, by issuer.',
    'counter',
    perIssuer('fetches'),
  );
  registerScraped(
    registry,
    'gateway_jwks_fetch_failures_total',
    'JWKS fetches that gave no key set (no answer, not 200, not a JSON Web Key Set), by issuer.',
    'counter',
    perIssuer('failures'),
  );
  registerScraped(
    registry,
    'gateway_jwks_key_set_age_seconds',
    "Seconds since the issuer's key set in use was fetched (absent until one is); across workers, the oldest.",
    'gauge',
    () => {
      // Two entries may share an issuer: the older key set speaks for it.
      const oldest = new Map<string, number>();
      for (const { issuer, fetchedAtMs } of state().jwksFetchedAt?.() ?? [])
        oldest.set(issuer, Math.min(fetchedAtMs, oldest.get(issuer) ?? Infinity));
      return [...oldest].map(([issuer, fetchedAtMs]) => ({
        value: Math.max(0, now() - fetchedAtMs) / 1000,
        labels: { issuer },
      }));
    },
    'max',
  );
  return (issuer) => {
    let counters = issuers.get(issuer);
    if (counters === undefined) {
      counters = { fetches: 0, failures: 0 };
      issuers.set(issuer, counters);
    }
    return counters;
  };
}

/**
 * A metric whose values are computed at scrape time. prom-client renders any registered
 * object with a name and a get() returning this shape; its Metric type also lists methods
 * (reset, labels...) that a read-only collector has no use for, hence the cast.
 */
function registerScraped(
  registry: Registry,
  name: string,
  help: string,
  type: 'counter' | 'gauge' | 'histogram',
  values: () => ScrapedValue[],
  aggregator: 'sum' | 'min' | 'max' = 'sum',
): void {
  const metric = {
    name,
    get: () => Promise.resolve({ name, help, type, values: values(), aggregator }),
  };
  registry.registerMetric(metric as unknown as Metric);
}

// The limits section (the rate-limit cost targets): the same gateway three times on the
// bench's Redis, cached Basic: rate limits off, and a never-refusing credential limit in
// each mode, exact (one script run per request) and lease (one per lease). Also what the
// accuracy section needs of the fixture (LimitsSetup).
import { median } from '../support/median.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import type { RateLimitMode } from '../../src/protection/rate-policy.js';
import { httpRequest } from './processes.js';
import { atLeast, verdict } from './rate-limit-figures.js';
import { formatNumber, perRoundRatios, ratio, summarize } from './report.js';
import { row, runRounds, type BenchContext, type Row, type SectionResult } from './scenarios.js';
import type { Target } from './targets.js';

/** What the limits and accuracy sections need from the bench's fixture. */
export interface LimitsSetup {
  /**
   * A gateway on the bench's Redis (engine `options.engine`) with these rate limits;
   * `extraArgs` go to `serve` (`--workers 2`).
   */
  readonly startGateway: (
    name: string,
    rateLimits: GatewayConfigInput['rateLimits'],
    extraArgs?: readonly string[],
  ) => Promise<Target>;
  /**
   * CPU microseconds a check of these limits adds to a request of the cached pair, measured
   * in the bench's process (limit-check-cost.ts).
   */
  readonly checkMicros: (rateLimits: GatewayConfigInput['rateLimits']) => Promise<number>;
  /** `Authorization: Basic …` of the cached pair. */
  readonly basicHeader: string;
  /** Deletes the cached pair's credential bucket in Redis (a full budget again). */
  readonly resetBucket: () => Promise<void>;
  /** Script runs (EVALSHA + EVAL, INFO commandstats) the bench's Redis has answered so far. */
  readonly scriptCalls: () => Promise<number>;
}

/** Requests per CPU-second with limits on / off, at least (issue 28's targets, per mode). */
export const LIMITS_TARGETS: Readonly<Record<RateLimitMode, number>> = {
  // One script run per request: the round trip's work on the gateway is the cost.
  exact: 0.85,
  // A script run per lease: the limit is decided in process, next to nothing.
  lease: 0.97,
};

/** A policy no bench load reaches: every request is checked and none refused. */
const NEVER_REFUSING = { requests: 1_000_000_000, periodSec: 1 } as const;

/**
 * `count` requests with the header, each on a new connection (with `--workers` they go to
 * the workers in turn, so each verifies and caches the pair); anything but 200 fails.
 */
export async function firstRequests(target: Target, header: string, count = 1): Promise<void> {
  const colon = header.indexOf(':');
  for (let i = 0; i < count; i += 1) {
    const answer = await httpRequest(target.url, {
      headers: { [header.slice(0, colon)]: header.slice(colon + 1).trim() },
    });
    if (answer.status !== 200)
      throw new Error(`${target.name}: a first request answered ${answer.status}: ${answer.body}`);
  }
}

/** A gateway on the bench's Redis with limits `mode` (off: none), and its row. */
async function limitsRow(
  ctx: BenchContext,
  setup: LimitsSetup,
  id: string,
  mode: 'off' | RateLimitMode,
): Promise<Row> {
  const { options } = ctx;
  ctx.onNote(`starting the gateway with rate limits ${mode}`);
  const target = await setup.startGateway(`gateway-${id}`, limitsOf(mode));
  await firstRequests(target, setup.basicHeader);
  const control = id.endsWith('control') ? ', a second gateway' : '';
  return row({
    id,
    label:
      mode === 'off'
        ? `gateway ${options.engine}, rate limits off${control}`
        : `gateway ${options.engine}, rate limits ${mode} (never refusing)`,
    target,
    ...(id === 'limits-off' ? {} : { bare: 'limits-off' }),
    spec: () => ({
      url: target.url,
      connections: options.connections,
      seconds: options.duration,
      header: setup.basicHeader,
    }),
  });
}

const limitsOf = (mode: 'off' | RateLimitMode): GatewayConfigInput['rateLimits'] =>
  mode === 'off' ? {} : { credential: { ...NEVER_REFUSING, mode } };

/**
 * Limits off, exact and lease: requests per CPU-second of the gateway process, each mode's
 * against off, and the script runs per request each row cost the bench's Redis (read around
 * each measured run). The Redis server's own CPU is not in the gateway's (not its tree):
 * the fleet section measures it. A second limits-off gateway (the control) shows how far two
 * like gateways measured one after the other differ; the cost of a check measured in process
 * gives the lease's figure, which is smaller than that.
 */
export async function limitsSection(ctx: BenchContext, setup: LimitsSetup): Promise<SectionResult> {
  const { options } = ctx;
  const title = `limits off, exact and lease (engine ${options.engine}, Basic cached, Redis buckets)`;
  const rows: Row[] = [];
  const calls = new Map<string, number[]>();
  for (const [id, mode] of [
    ['limits-off', 'off'],
    ['limits-off-control', 'off'],
    ['limits-exact', 'exact'],
    ['limits-lease', 'lease'],
  ] as const) {
    const perRequest: number[] = [];
    calls.set(id, perRequest);
    let before = 0;
    rows.push({
      ...(await limitsRow(ctx, setup, id, mode)),
      beforeRun: async () => {
        before = await setup.scriptCalls();
      },
      afterRun: async (run) => {
        const delta = (await setup.scriptCalls()) - before;
        if (run.valid) perRequest.push(delta / run.wrk.requests);
      },
    });
  }
  await runRounds(ctx, 'limits', rows);
  const [off, control, exact, lease] = rows;
  ctx.onNote('limits: the cost of a check, in process');
  // Lease only: an exact check is a round trip, which a loop of checks one at a time
  // measures at its slowest, not as the gateway's many requests in flight share it.
  const leaseCheckMicros = await setup.checkMicros(limitsOf('lease'));
  const offMicros = off ? summarize(off).cpuMicrosPerRequest : NaN;
  // Requests per CPU-second on / off = CPU per request off / on: one after the other…
  const interleaved = {
    exact: off && exact ? ratio(off, exact, 'cpuMicrosPerRequest') : NaN,
    lease: off && lease ? ratio(off, lease, 'cpuMicrosPerRequest') : NaN,
    control: off && control ? ratio(off, control, 'cpuMicrosPerRequest') : NaN,
  };
  // …and, for lease, with a check's in-process cost added to the off row's CPU per request:
  // the lease's target is read there, its effect being under the control's spread.
  const inProcess = offMicros / (offMicros + leaseCheckMicros);
  const perCpuSecond = { exact: interleaved.exact, lease: inProcess };
  const rps = {
    exact: off && exact ? ratio(exact, off, 'rps') : NaN,
    lease: off && lease ? ratio(lease, off, 'rps') : NaN,
  };
  const callsPerRequest = Object.fromEntries(
    rows.map((r) => [r.id.replace('limits-', ''), median(calls.get(r.id) ?? [])]),
  );
  const pass = {
    exact: atLeast(perCpuSecond.exact, LIMITS_TARGETS.exact),
    lease: atLeast(perCpuSecond.lease, LIMITS_TARGETS.lease),
  };
  const spread = (r: Row | undefined): string => {
    const values = r === undefined || off === undefined ? [] : perRoundRatios(off, r);
    return values.length === 0
      ? 'n/a'
      : `per round ${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
  };
  const target = (mode: RateLimitMode, why: string): string =>
    `target ≥ ${LIMITS_TARGETS[mode].toFixed(2)} (${why}): ${verdict(pass[mode])}`;
  const measured = (mode: RateLimitMode, r: Row | undefined): string =>
    `limits ${mode} / off, requests per CPU-second: gateways one after the other × ${formatNumber(interleaved[mode], 'ratio')} (median, ${spread(r)}), req/s × ${formatNumber(rps[mode], 'ratio')}`;
  const notes = [
    `${measured('exact', exact)}; ${target('exact', 'one script run per request, one after the other')}`,
    `${measured('lease', lease)}; a check in process ${leaseCheckMicros.toFixed(2)} µs on the off row's ${formatNumber(offMicros, 'int')} µs: × ${inProcess.toFixed(3)}; ${target('lease', 'a script run per lease, the limit decided in process; in process')}`,
    `control: a second limits-off gateway against the first, one after the other × ${formatNumber(interleaved.control, 'ratio')} (${spread(control)}): how far two like gateways measure apart on these cores, more than a lease check costs; so the lease's target is read in process`,
    "(CPU is the gateway process tree's; the Redis server's work for the scripts is not in it. In process: the built limiter on the bench's Redis, 100,000 checks of the cached pair with its two header fields set on a response, CPU of the bench process less the loop's, median of 5. Redis calls/req: EVALSHA + EVAL on the bench's Redis over each measured run / the requests wrk counted; off: the last-use writes only)",
  ];
  return {
    id: 'limits',
    title,
    rows,
    notes,
    columns: [
      {
        header: 'Redis calls/req',
        cell: (r) => {
          const value = median(calls.get(r.id) ?? []);
          return Number.isFinite(value) ? value.toFixed(4) : 'n/a';
        },
      },
    ],
    extra: {
      perCpuSecond,
      interleaved,
      leaseCheckMicros,
      inProcess,
      rps,
      callsPerRequest,
      targets: LIMITS_TARGETS,
      pass,
    },
  };
}

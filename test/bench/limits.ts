// The limits section (the rate-limit cost targets): the same gateway three times on the
// bench's Redis, cached Basic: rate limits off, and a never-refusing credential limit in
// each mode, exact (one script run per request) and lease (one per lease). Also what the
// accuracy section needs of the fixture (LimitsSetup).
import { median } from '../support/median.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import type { RateLimitMode } from '../../src/protection/rate-policy.js';
import { httpRequest } from './processes.js';
import { atLeast, verdict } from './rate-limit-figures.js';
import { formatNumber, ratio } from './report.js';
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

/**
 * Limits off, exact and lease: requests per CPU-second of the gateway process, each mode's
 * against off, and the script runs per request each row cost the bench's Redis (read around
 * each measured run). The Redis server's own CPU is not in the gateway's (not its tree):
 * the fleet section measures it.
 */
export async function limitsSection(ctx: BenchContext, setup: LimitsSetup): Promise<SectionResult> {
  const { options } = ctx;
  const title = `limits off, exact and lease (engine ${options.engine}, Basic cached, Redis buckets)`;
  const rows: Row[] = [];
  const calls = new Map<string, number[]>();
  for (const mode of ['off', 'exact', 'lease'] as const) {
    const id = `limits-${mode}`;
    ctx.onNote(`starting the gateway with rate limits ${mode}`);
    const target = await setup.startGateway(
      `gateway-${id}`,
      mode === 'off' ? {} : { credential: { ...NEVER_REFUSING, mode } },
    );
    await firstRequests(target, setup.basicHeader);
    const perRequest: number[] = [];
    calls.set(id, perRequest);
    let before = 0;
    rows.push(
      row({
        id,
        label:
          mode === 'off'
            ? `gateway ${options.engine}, rate limits off`
            : `gateway ${options.engine}, rate limits ${mode} (never refusing)`,
        target,
        ...(mode === 'off' ? {} : { bare: 'limits-off' }),
        spec: () => ({
          url: target.url,
          connections: options.connections,
          seconds: options.duration,
          header: setup.basicHeader,
        }),
        beforeRun: async () => {
          before = await setup.scriptCalls();
        },
        afterRun: async (run) => {
          const delta = (await setup.scriptCalls()) - before;
          if (run.valid) perRequest.push(delta / run.wrk.requests);
        },
      }),
    );
  }
  await runRounds(ctx, 'limits', rows);
  const [off, exact, lease] = rows;
  // Requests per CPU-second on / off = CPU per request off / on.
  const perCpuSecond = {
    exact: off && exact ? ratio(off, exact, 'cpuMicrosPerRequest') : NaN,
    lease: off && lease ? ratio(off, lease, 'cpuMicrosPerRequest') : NaN,
  };
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
  const line = (mode: RateLimitMode, why: string): string =>
    `limits ${mode} / off (median of per-round ratios): requests per CPU-second × ${formatNumber(perCpuSecond[mode], 'ratio')}, req/s × ${formatNumber(rps[mode], 'ratio')}; target ≥ ${LIMITS_TARGETS[mode].toFixed(2)} (${why}): ${verdict(pass[mode])}`;
  const notes = [
    line('exact', 'one script run per request'),
    line('lease', 'a script run per lease, the limit decided in process'),
    "(CPU is the gateway process tree's; the Redis server's work for the scripts is not in it. Redis calls/req: EVALSHA + EVAL on the bench's Redis over each measured run / the requests wrk counted; off: the last-use writes only)",
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
    extra: { perCpuSecond, rps, callsPerRequest, targets: LIMITS_TARGETS, pass },
  };
}

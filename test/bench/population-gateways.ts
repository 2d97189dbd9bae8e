// The population section's gateways: each with its admin port open (the bench reads its
// bcrypt and verified-record counters from /metrics), verified records on or off, and the
// waits the section needs around them (ready, quiet).
import { setTimeout as sleep } from 'node:timers/promises';
import { BCRYPT_COMPARES, sample } from '../support/scrape-metric.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { freePort } from '../support/redis-server.js';
import { cpuSeconds } from './measure.js';
import { httpRequest, processTree, type ProcessGroup } from './processes.js';
import { startGateway, type Target } from './targets.js';

export interface MeteredGateway {
  readonly target: Target;
  readonly adminPort: number;
}

/** The results gateway_verified_record_checks_total counts (verified-record.ts). */
export const RECORD_CHECKS = ['hit', 'absent', 'ended', 'other_key', 'refused'] as const;
export type RecordCheckResult = (typeof RECORD_CHECKS)[number];

export interface GatewayCounters {
  readonly bcryptCompares: number;
  readonly recordChecks: Record<RecordCheckResult, number>;
  /**
   * Its answers other than 2xx by status and by who produced them, e.g. `503 gateway` (its own
   * refusal or failure) or `404 upstream` (passed on): gateway_requests_total's labels. What
   * the errors a load client counted were, when there were any.
   */
  readonly failedAnswers: Readonly<Record<string, number>>;
}

const REQUESTS_SAMPLE = /^gateway_requests_total\{([^}]*)\} (\S+)$/;
const LABEL = /(\w+)="([^"]*)"/g;

/** gateway_requests_total's samples other than 2xx, summed over routes by `status source`. */
export function failedAnswersOf(metrics: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    const match = REQUESTS_SAMPLE.exec(line);
    if (match === null) continue;
    const labels = new Map<string, string>();
    for (const [, name = '', value = ''] of (match[1] ?? '').matchAll(LABEL))
      labels.set(name, value);
    const status = labels.get('status') ?? '';
    if (status.startsWith('2')) continue;
    const name = `${status} ${labels.get('source') ?? ''}`.trim();
    counts[name] = (counts[name] ?? 0) + Number(match[2]);
  }
  return counts;
}

/**
 * Records-off gateways run without the lockout. Every connection comes from 127.0.0.1 and the
 * lockout counts the bcrypt checks in flight per network in Redis, shared by every gateway of
 * the section: 64 connections waiting on bcrypt are refused in part (429) at the default
 * threshold, and while a records-off gateway still drains its bcrypt queue after its run, its
 * reservations refuse the next row's clients too. Its scripts cost nothing next to bcrypt's
 * 50 ms. Records-on gateways keep the default lockout: a check a record proves reserves nothing.
 */
/**
 * A gateway on `config` (engine and store given), its admin port on, records on (the default
 * lockout) or off (no lockout).
 */
export async function startMeteredGateway(
  group: ProcessGroup,
  name: string,
  config: GatewayConfigInput,
  records: boolean,
  extraArgs: readonly string[] = [],
): Promise<MeteredGateway> {
  const adminPort = await freePort();
  const target = await startGateway(
    group,
    name,
    {
      ...config,
      admin: { host: '127.0.0.1', port: adminPort },
      auth: {
        ...config.auth,
        basic: { ...config.auth?.basic, verifiedRecords: { enabled: records } },
      },
      ...(records ? {} : { lockout: { ...config.lockout, enabled: false } }),
    },
    extraArgs,
  );
  return { target, adminPort };
}

/** Its counters now (with workers: summed over them by the primary). */
export async function readCounters(gateway: MeteredGateway): Promise<GatewayCounters> {
  const answer = await httpRequest(`http://127.0.0.1:${gateway.adminPort}/metrics`);
  if (answer.status !== 200)
    throw new Error(`${gateway.target.name}: /metrics answered ${answer.status}`);
  const checks = {} as Record<RecordCheckResult, number>;
  for (const result of RECORD_CHECKS)
    checks[result] = sample(
      answer.body,
      `gateway_verified_record_checks_total{result="${result}"}`,
    );
  return {
    bcryptCompares: sample(answer.body, BCRYPT_COMPARES),
    recordChecks: checks,
    failedAnswers: failedAnswersOf(answer.body),
  };
}

/** after − before, counter by counter. */
export function countersBetween(before: GatewayCounters, after: GatewayCounters): GatewayCounters {
  const checks = {} as Record<RecordCheckResult, number>;
  for (const result of RECORD_CHECKS)
    checks[result] = after.recordChecks[result] - before.recordChecks[result];
  const failedAnswers: Record<string, number> = {};
  for (const [name, count] of Object.entries(after.failedAnswers)) {
    const added = count - (before.failedAnswers[name] ?? 0);
    if (added > 0) failedAnswers[name] = added;
  }
  return {
    bcryptCompares: after.bcryptCompares - before.bcryptCompares,
    recordChecks: checks,
    failedAnswers,
  };
}

/** Resolves once its admin port's /readyz answers 200 (every worker ready), or throws. */
export async function untilReady(gateway: MeteredGateway, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await httpRequest(`http://127.0.0.1:${gateway.adminPort}/readyz`).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline)
      throw new Error(`${gateway.target.name}: /readyz not 200 within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * Resolves once the process tree of `pid` has used at most 10 ms of CPU in 200 ms (or after
 * `maxMs`): a proxy still verifying the pairs of requests wrk left in flight (bcrypt, tens of
 * ms each) would take the next row's CPU.
 */
export async function untilQuiet(pid: number, maxMs = 5_000): Promise<void> {
  const pids = processTree(pid);
  const deadline = Date.now() + maxMs;
  let last = cpuSeconds(pids);
  while (Date.now() < deadline) {
    await sleep(200);
    const now = cpuSeconds(pids);
    if (now - last <= 0.01) return;
    last = now;
  }
}

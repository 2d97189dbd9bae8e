/**
 * A rate-limit policy: `requests` per `periodSec` on average, of which up to `burst` may come
 * at once. Over any interval of d seconds a policy admits at most `burst + d × requests /
 * periodSec` requests: there is no window edge at which twice the quota can pass.
 */
export interface RatePolicy {
  readonly requests: number;
  readonly periodSec: number;
  readonly burst: number;
}

/**
 * How a shared store's bucket is counted: `lease` (the default) spends a share this process
 * took of it (leased-buckets.ts); `exact` asks the store for every request.
 */
export type RateLimitMode = 'lease' | 'exact';

/** A configured limit: its policy, how a shared store counts it, and whether it refuses. */
export interface RateLimit extends RatePolicy {
  readonly mode: RateLimitMode;
  /** Decided and counted, never refused: for rolling a limit out. */
  readonly shadow: boolean;
}

/**
 * GCRA (the generic cell rate algorithm, ITU-T I.371) on whole microseconds. The state of a
 * bucket is one number, its theoretical arrival time (TAT): the time at which the bucket
 * would be full again. The Lua script of the Redis limiter does this same integer math, so
 * both implementations answer alike to the request.
 */
export interface GcraStep {
  readonly allowed: boolean;
  /** The new TAT when allowed; the unchanged one when refused. */
  readonly tatUs: number;
  /** Requests charged: 1 up to the count asked for when allowed, 0 when refused. */
  readonly granted: number;
  /** Requests that could still pass at once after this one. */
  readonly remaining: number;
  /** Allowed: µs until the bucket is full again. Refused: µs until a request can pass. */
  readonly waitUs: number;
}

/** µs between two requests at the policy's average rate (at least 1). */
export function emissionIntervalUs(policy: RatePolicy): number {
  return Math.max(1, Math.round((policy.periodSec * 1_000_000) / policy.requests));
}

/**
 * Decides one request at `nowUs` against a bucket whose TAT is `tatUs` (undefined: full).
 * With `count` above 1 it charges as many requests as the bucket holds, up to `count` (a
 * lease: the first is this request's); it refuses only when the bucket holds none.
 */
export function gcra(
  tatUs: number | undefined,
  nowUs: number,
  policy: RatePolicy,
  count = 1,
): GcraStep {
  const interval = emissionIntervalUs(policy);
  const tolerance = (policy.burst - 1) * interval;
  const start = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  if (start - nowUs > tolerance) {
    return {
      allowed: false,
      tatUs: start,
      granted: 0,
      remaining: 0,
      waitUs: start - nowUs - tolerance,
    };
  }
  const held = Math.floor((tolerance - (start - nowUs)) / interval) + 1;
  const granted = Math.min(Math.max(1, count), held);
  const next = start + granted * interval;
  return { allowed: true, tatUs: next, granted, remaining: held - granted, waitUs: next - nowUs };
}

/** What a bucket that was not charged (another bucket refused the request) looks like now. */
export function peek(tatUs: number | undefined, nowUs: number, policy: RatePolicy): GcraStep {
  const interval = emissionIntervalUs(policy);
  const tolerance = (policy.burst - 1) * interval;
  const start = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  return {
    allowed: start - nowUs <= tolerance,
    tatUs: start,
    granted: 0,
    remaining: Math.max(0, Math.floor((tolerance - (start - nowUs)) / interval) + 1),
    waitUs: start - nowUs,
  };
}

/** Largest values an override may carry: keeps the µs math exact in a double. */
export const MAX_REQUESTS = 1_000_000_000;
export const MAX_PERIOD_SEC = 31_536_000;

/**
 * The `rate_limit` field a web application may write on a key or subject hash in Redis:
 * `<requests>/<periodSec>` or `<requests>/<periodSec>,<burst>` (burst defaults to requests),
 * or `none` (no credential limit for it). Anything else is ignored (the configured policy
 * applies). The Lua script parses it the same way; this is the reference and the test.
 */
export function parseRateLimitOverride(value: string): RatePolicy | 'none' | undefined {
  if (value === 'none') return 'none';
  const match = /^(\d{1,10})\/(\d{1,8})(?:,(\d{1,10}))?$/.exec(value);
  if (match === null) return undefined;
  const requests = Number(match[1]);
  const periodSec = Number(match[2]);
  const burst = match[3] === undefined ? requests : Number(match[3]);
  return validPolicy(requests, periodSec, burst) ? { requests, periodSec, burst } : undefined;
}

function validPolicy(requests: number, periodSec: number, burst: number): boolean {
  return (
    requests >= 1 &&
    requests <= MAX_REQUESTS &&
    periodSec >= 1 &&
    periodSec <= MAX_PERIOD_SEC &&
    burst >= 1 &&
    burst <= MAX_REQUESTS
  );
}

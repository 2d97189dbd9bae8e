import type { RatePolicy } from './rate-policy.js';

/** The policies of the IETF headers: one bucket each. */
export type PolicyName = 'credential' | 'subject' | 'route' | 'address';

export interface BucketRequest {
  readonly name: PolicyName;
  /** The bucket's id under the store's prefix, e.g. `rl:key:ak_…`. */
  readonly id: string;
  /** Undefined: the bucket only counts when an override gives it a policy. */
  readonly policy: RatePolicy | undefined;
  /**
   * The hash whose `rate_limit` field replaces `policy` when it holds one (`key:<key>` or
   * `subject:<subject>`, under the store's prefix). Only Redis holds overrides.
   */
  readonly override?: string | undefined;
}

export interface TakeRequest {
  readonly buckets: readonly BucketRequest[];
}

export interface BucketState {
  readonly name: PolicyName;
  readonly policy: RatePolicy;
  readonly remaining: number;
  /** Allowed: µs until the bucket is full again. Refused (this or another bucket): see gcra. */
  readonly waitUs: number;
}

/** A `rate_limit` field no policy could be read from: ignored, and reported. */
export interface MalformedOverride {
  /** The hash, as the store names it (with its prefix). */
  readonly key: string;
  /** The field's value, at most 64 characters of it. */
  readonly value: string;
}

export interface TakeResult {
  /** Every bucket admitted the request; then each was charged, otherwise none was. */
  readonly allowed: boolean;
  /** When refused: µs until every refusing bucket would admit one request. */
  readonly retryAfterUs: number;
  /** The buckets that have a policy (after overrides), in request order. */
  readonly states: readonly BucketState[];
  /** Overrides read for this take that are in no form the gateway reads. */
  readonly malformedOverrides?: readonly MalformedOverride[];
}

/**
 * Where the buckets live: in process (memory) or in Redis, shared by every instance. One
 * take is atomic: all buckets are decided and charged together, in one Redis round trip.
 * A store that cannot answer rejects with GatewayError `credential_store_unavailable`.
 */
export interface RateBucketStore {
  take(request: TakeRequest): TakeResult | Promise<TakeResult>;
}

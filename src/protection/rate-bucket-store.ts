import type { RateLimitMode, RatePolicy } from './rate-policy.js';

/**
 * Whose credential a bucket counts, and whose settings may override its policy: a key pair
 * (Basic), or a subject (Bearer, whose credential is the subject). A pair names its subject
 * too: a sharded store keeps the pair's buckets and settings with the subject's.
 */
export type BucketOwner =
  | { readonly kind: 'key'; readonly key: string; readonly subject: string }
  | { readonly kind: 'subject'; readonly subject: string };

/**
 * What a bucket counts, by the policy it serves (its `kind`, the name in the IETF headers);
 * each store names (and keeps) it its own way.
 */
export type BucketId =
  | { readonly kind: 'credential'; readonly owner: BucketOwner }
  | { readonly kind: 'subject'; readonly subject: string }
  | { readonly kind: 'route'; readonly route: string; readonly owner: BucketOwner }
  | { readonly kind: 'address'; readonly network: string };

/** The policies of the IETF headers: one bucket each. */
export type PolicyName = BucketId['kind'];

export interface BucketRequest {
  readonly bucket: BucketId;
  /** Undefined: the bucket only counts when an override gives it a policy. */
  readonly policy: RatePolicy | undefined;
  /**
   * Whose `rate_limit` setting replaces `policy` when it holds one. Only a shared store
   * (Redis) holds such settings; the in-process one ignores this.
   */
  readonly override?: BucketOwner | undefined;
  /** Undefined: `lease`. */
  readonly mode?: RateLimitMode | undefined;
  /** False: a shadow limit, which never refuses: charged when it admits, reported when not. */
  readonly enforce?: boolean | undefined;
  /** Requests to charge at once when the bucket holds them (a lease), the first this one's. */
  readonly count?: number | undefined;
}

/**
 * The buckets of one request, decided together. They count one credential's subject (its
 * credential, subject-wide and route buckets), or one client network: a sharded store keeps
 * each of those in one place, where one take stays atomic.
 */
export interface TakeRequest {
  readonly buckets: readonly BucketRequest[];
}

export interface BucketState {
  /** The bucket's position in the take's `buckets`. */
  readonly index: number;
  readonly name: PolicyName;
  /** False: a shadow limit's bucket (see BucketRequest.enforce). */
  readonly enforced: boolean;
  /** Requests charged (0: refused, or not charged because another bucket refused). */
  readonly granted: number;
  readonly policy: RatePolicy;
  readonly remaining: number;
  /** Allowed: µs until the bucket is full again. Refused (this or another bucket): see gcra. */
  readonly waitUs: number;
}

/** A `rate_limit` setting no policy could be read from: ignored, and reported. */
export interface MalformedOverride {
  /** Where the store keeps it, in the store's own words (for Redis, the hash's key name). */
  readonly key: string;
  /** The field's value, at most 64 characters of it. */
  readonly value: string;
}

export interface TakeResult {
  /**
   * Every enforced bucket admitted the request; then each bucket that could was charged (a
   * shadow one that could not is reported), otherwise none was.
   */
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
  /** Other processes share these buckets (Redis): lease-mode buckets are spent from leases. */
  readonly shared?: boolean;
}

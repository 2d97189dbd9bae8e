import type { LockoutConfig } from '../config/config-schema.js';
import type { AuditLog } from '../credentials/audit-log.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import type { Lockout } from '../protection/lockout.js';
import type { RateBucketStore } from '../protection/rate-bucket-store.js';

/** What the in-process bucket store keeps; a shared store keeps its buckets itself. */
export interface BucketOptions {
  /** Buckets kept in process at most (`rateLimits.maxTrackedBuckets`). */
  readonly maxTrackedBuckets: number;
}

/**
 * Where the gateway keeps what it shares: credentials, lockout counters, rate-limit buckets
 * and the audit trail's events, behind the contracts of credentials/ and protection/. The
 * composition root picks one backend at start (`credentials.store`); nothing else knows which
 * one it is.
 *
 * The lockout and the buckets are made per configuration (a SIGHUP rebuilds them with the
 * new limits) on the backend's one connection, which the credential store owns: its health,
 * ping and close are the backend's.
 */
export interface Backend {
  readonly credentials: CredentialStore;
  /** The lockout of failed attempts under `config`, on this backend. */
  lockout(config: LockoutConfig): Lockout;
  /** The rate-limit buckets, on this backend. */
  buckets(options: BucketOptions): RateBucketStore;
  /** The audit trail's log of key events, on this backend (credentials/audit-log.ts). */
  readonly audit: AuditLog;
  /** Redis only: this process's connection to each node, read when asked (a scrape). */
  readonly redisConnections?: () => readonly RedisConnectionState[];
}

/** A Redis node's part: a Cluster's master or replica, a Sentinel's master, or a lone server. */
export type RedisRole = 'master' | 'replica' | 'standalone';

export interface RedisConnectionState {
  /** `host:port`, as the client names the node. */
  readonly node: string;
  readonly role: RedisRole;
  /** This process's connection to it is ready for commands. */
  readonly up: boolean;
}

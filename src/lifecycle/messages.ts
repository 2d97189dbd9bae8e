import type { GatewayConfig } from '../config/config-schema.js';
import type { MetricsSnapshot } from '../observability/metrics.js';

/**
 * The IPC between the primary of `serve --workers` and its workers. A worker takes its
 * orders from these messages only (it ignores signals): the primary owns the configuration,
 * the signals and the admin port.
 */

/** Set in a worker's environment by the primary: the worker's slot number (1..N). */
export const WORKER_ENV = 'ACCOUNTS_GATEWAY_WORKER';

export type ToWorker =
  /** Build the gateway with this (validated) configuration and listen. */
  | { readonly type: 'start'; readonly config: GatewayConfig }
  /** Apply this validated configuration, as SIGHUP does in one process. */
  | { readonly type: 'reload'; readonly config: GatewayConfig }
  /** Stop accepting, let in-flight requests finish, exit 0. */
  | { readonly type: 'drain' }
  /** Answer with a `readiness`. */
  | { readonly type: 'readiness?'; readonly id: number }
  /** Answer with `metrics`. */
  | { readonly type: 'metrics?'; readonly id: number };

export type WorkerReadiness = 'ready' | 'starting' | 'draining' | 'store_unavailable';

export type FromWorker =
  /** Listening for orders: the primary answers with `start` (or `drain`). */
  | { readonly type: 'hello' }
  | { readonly type: 'listening'; readonly port: number }
  /** The start failed (the reason is logged by the worker too); it exits 1. */
  | { readonly type: 'start-failed'; readonly message: string }
  | { readonly type: 'readiness'; readonly id: number; readonly state: WorkerReadiness }
  | { readonly type: 'metrics'; readonly id: number; readonly metrics: MetricsSnapshot }
  /** While draining, every 100 ms: the requests still in flight. */
  | { readonly type: 'in-flight'; readonly count: number };

/** The answers the primary waits for, by the question's type. */
export type Answer = Extract<FromWorker, { id: number }>;

import type { RedisConfig } from '../../config/config-schema.js';
import { DEFAULT_AUDIT_SETTINGS, type AuditSettings } from '../../credentials/audit-log.js';
import {
  DEFAULT_RETAIN_ENDED_SEC,
  type RetentionOptions,
} from '../../credentials/credential-store.js';
import { withLocalLocks, type LocalLocks } from '../../protection/local-locks.js';
import type { Backend } from '../backend.js';
import { createRedisBreakers, type BreakerTransition } from './breakers.js';
import { createRedisBucketStore } from './bucket-store.js';
import {
  createRedisClient,
  redisAddress,
  redisSecrets,
  seedDiagnosis,
  watchRedisConnection,
  type RedisClient,
  type RedisConnection,
  type StoreLog,
} from './client.js';
import { watchConnectionStates } from './connection-states.js';
import { createRedisCredentialStore } from './credential-store.js';
import { redisLayout, singleSlotLayout, type RedisLayout } from './layout.js';
import { createRedisLockout } from './lockout-store.js';
import { createRedisAuditLog } from './redis-audit.js';
import { createPairRun } from './pair-runs.js';
import { createScriptRunner, type ScriptRunner } from './run-script.js';
import { createSingleSlot, type SingleSlot } from './single-slot.js';

export interface RedisBackendOptions {
  /** A client of the caller's own (tests count its commands); by default the config's. */
  readonly client?: RedisClient;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now?: () => number;
  /** Where the connection's changes of state are logged (the gateway's logger); none: silent. */
  readonly log?: StoreLog | undefined;
  /** How long ended pairs are kept (keys.retainEndedDays). */
  readonly retention?: RetentionOptions;
  /** How many key events are kept, and how long (audit.*). */
  readonly audit?: AuditSettings;
  /** Told of each breaker's open and close (the gateway's metric); the log line is the backend's. */
  readonly onBreakerChange?: (target: string, open: boolean) => void;
  /** The breakers' clock: milliseconds on a monotonic scale (performance.now by default). */
  readonly breakerClock?: () => number;
  /** Told how long each call sent to Redis took (the gateway's metric). */
  readonly onCallTime?: (seconds: number) => void;
}

/** How long a start waits for Redis's first answer: the connect timeout, and a second more. */
const SETTLE_WITHIN_MS = 3_000;

/**
 * Everything on one Redis connection (standalone, Sentinel or Cluster): the credential store,
 * the lockout, the rate-limit buckets and the audit log, shared by every gateway and worker on
 * that Redis.
 */
export function createRedisBackend(
  config: RedisConfig,
  options: RedisBackendOptions = {},
): Backend {
  const client = options.client ?? createRedisClient(config);
  const now = options.now ?? Date.now;
  // Its 'error' listener also keeps ioredis's connection errors from being thrown: they
  // surface as failed commands (503), and the client reconnects by itself.
  const connection = watchRedisConnection(client, {
    address: redisAddress(config),
    secrets: redisSecrets(config),
    log: options.log,
    settleWithinMs: SETTLE_WITHIN_MS,
    diagnose: seedDiagnosis(config),
  });
  const breakers = createRedisBreakers(client, {
    settings: config.breaker,
    address: redisAddress(config),
    // A call is bounded by the command timeout (run-script.ts): twice that is never a live probe.
    probeTimeoutMs: config.commandTimeoutMs * 2,
    ...(options.breakerClock === undefined ? {} : { now: options.breakerClock }),
    onTransition: (transition) => {
      logBreaker(options.log, connection, transition);
      options.onBreakerChange?.(transition.target, transition.kind === 'opened');
    },
  });
  const runner = createScriptRunner(client, {
    timeoutMs: config.commandTimeoutMs,
    connection,
    breakers,
    ...(options.onCallTime === undefined ? {} : { onCallTime: options.onCallTime }),
  });
  const layout = redisLayout(config.keyPrefix);
  const retention = options.retention ?? { retainEndedSec: DEFAULT_RETAIN_ENDED_SEC };
  // The locks the current configuration's lockout remembers (a reload makes another, and the
  // last one made is the one requests use): what an operator's unlock must reach at once.
  let localLocks: LocalLocks | undefined;
  return {
    credentials: createRedisCredentialStore({
      client,
      connection,
      runner,
      layout,
      single: openSingleSlot(config, { runner, layout, now, retention }),
      now,
      retention,
      log: options.log,
      unlocks: {
        unlocked: (unlock) => localLocks?.forget(unlock),
        missed: () => localLocks?.forgetAll(),
      },
    }),
    // A lock seen once is remembered in process until it ends, so a flood against a locked
    // address or key costs no Redis round trip (local-locks.ts).
    lockout: (lockout) =>
      (localLocks = withLocalLocks(createRedisLockout(lockout, runner, layout), now)),
    buckets: () => createRedisBucketStore(runner, layout),
    audit: createRedisAuditLog(
      runner,
      layout,
      options.audit ?? DEFAULT_AUDIT_SETTINGS,
      now,
      config.commandTimeoutMs,
    ),
    redisConnections: watchConnectionStates(client),
  };
}

/**
 * `redis breaker opened` (warn: what it stands for, the failures in a row, how long until a
 * probe, and why the last one failed: the connection's own failure while it is down, as
 * its lines tell it, else the call's) and `redis breaker closed` (info: how long it was
 * open, and whether a probe closed it or a Cluster failover left it with no slot to serve).
 * One line per change, never one per refused call.
 */
function logBreaker(
  log: StoreLog | undefined,
  connection: RedisConnection,
  transition: BreakerTransition,
): void {
  if (transition.kind === 'closed') {
    log?.info(
      {
        store: 'redis',
        target: transition.target,
        open_ms: Math.round(transition.openForMs),
        by: transition.by,
      },
      'redis breaker closed',
    );
    return;
  }
  log?.warn(
    {
      store: 'redis',
      target: transition.target,
      failures: transition.failures,
      retry_after_ms: transition.retryAfterMs,
      cause: connection.describe(transition.lastFailure).why,
    },
    'redis breaker opened',
  );
}

/** The single-slot layout `credentials.redis.singleSlotPrefix` names, if it names one. */
export function openSingleSlot(
  config: RedisConfig,
  deps: {
    readonly runner: ScriptRunner;
    readonly layout: RedisLayout;
    readonly now: () => number;
    readonly retention: RetentionOptions;
  },
): SingleSlot | undefined {
  if (config.singleSlotPrefix === false) return undefined;
  return createSingleSlot({
    runner: deps.runner,
    layout: deps.layout,
    single: singleSlotLayout(config.singleSlotPrefix),
    runPairs: createPairRun(deps),
  });
}

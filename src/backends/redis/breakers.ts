import { Cluster, Command } from 'ioredis';
import {
  createCircuitBreaker,
  type BreakerChange,
  type CircuitBreaker,
} from '../../concurrency/circuit-breaker.js';
import type { RedisClient } from './client.js';

/** `credentials.redis.breaker`: when calls stop waiting for a Redis that fails. */
export interface BreakerSettings {
  readonly enabled: boolean;
  /** Consecutive infrastructure failures that open a breaker. */
  readonly failureThreshold: number;
  /** How long it stays open the first time before one call may probe. */
  readonly openMs: number;
  /** The cap of that wait, which doubles after each failed probe. */
  readonly maxOpenMs: number;
}

/** An open or a close of one breaker: what its log line and its metric say. */
export type BreakerTransition = BreakerChange & {
  /** What the breaker stands for: the Redis address, or on a Cluster the master's host:port. */
  readonly target: string;
  /** The failure that opened it (an `opened` only). */
  readonly lastFailure?: unknown;
  /**
   * What closed it (a `closed` only): a probe Redis answered, or a Cluster slot map in which
   * the target serves no slot any more (its replica was promoted: nothing will probe it).
   */
  readonly by?: 'probe' | 'failover';
};

export interface RedisBreakers {
  /**
   * Runs `call`, one bounded operation on `key`, through the breaker of whatever serves
   * `key`: counts its infrastructure failure, or rejects at once with CircuitOpenError
   * (nothing sent) while that breaker is open.
   */
  run<T>(key: string, call: () => Promise<T>): Promise<T>;
}

export interface RedisBreakersOptions {
  readonly settings: BreakerSettings;
  /** The address a standalone or Sentinel client's one breaker stands for. */
  readonly address: string;
  /** Above the longest a call can take: a probe not settled by then is presumed failed. */
  readonly probeTimeoutMs: number;
  /** Milliseconds on a monotonic scale (performance.now by default). */
  readonly now?: () => number;
  readonly onTransition?: (transition: BreakerTransition) => void;
}

/** Where a Cluster key's slot has no master in the client's map yet (not connected). */
export const UNMAPPED_TARGET = 'cluster (no master known for the slot)';

/**
 * The breakers of one client (concurrency/circuit-breaker.ts says how one works and why it
 * counts consecutive failures). Standalone and Sentinel: one, since every command goes to the
 * one master and they fail together. Cluster: one per master, found at each call from the
 * key's slot in the client's own slot map, because masters fail alone: one breaker for the
 * Cluster would be kept closed by the live masters' answers while every call to the dead
 * one's slots waited out its timeout. After a failover the map names the promoted replica,
 * whose breaker is closed, so its slots are served without waiting for the old one's probe.
 */
export function createRedisBreakers(
  client: RedisClient,
  options: RedisBreakersOptions,
): RedisBreakers {
  const { settings, address } = options;
  if (!settings.enabled) return { run: (_key, call) => call() };
  const now = options.now ?? (() => performance.now());
  const report = options.onTransition ?? (() => undefined);
  interface Entry {
    readonly breaker: CircuitBreaker;
    lastFailure: unknown;
    openedAt: number;
    /** Dropped after a failover: a probe still in flight then reports nothing. */
    dropped: boolean;
  }
  const breakers = new Map<string, Entry>();

  const breakerOf = (target: string): Entry => {
    const known = breakers.get(target);
    if (known !== undefined) return known;
    const entry: Entry = {
      lastFailure: undefined,
      openedAt: 0,
      dropped: false,
      breaker: createCircuitBreaker({
        failureThreshold: settings.failureThreshold,
        openMs: settings.openMs,
        maxOpenMs: settings.maxOpenMs,
        probeTimeoutMs: options.probeTimeoutMs,
        now,
        onChange: (change) => {
          if (entry.dropped) return;
          if (change.kind === 'closed') {
            report({ ...change, target, by: 'probe' });
            return;
          }
          entry.openedAt = now();
          report({ ...change, target, lastFailure: entry.lastFailure });
        },
      }),
    };
    breakers.set(target, entry);
    return entry;
  };

  let targetOf = (_key: string): string => address;
  if (!(client instanceof Cluster)) {
    // The client found its master again (a restart, a Sentinel failover): the next call
    // probes at once rather than after the rest of the backoff.
    client.on('ready', () => breakers.get(address)?.breaker.probeNow());
  } else {
    targetOf = (key) => client.slots[slotOf(key)]?.[0] ?? UNMAPPED_TARGET;
    // A failed-over master serves no slot in the new map, so no call, and no probe, reaches
    // its breaker any more: it is dropped, and an open one reported closed, or its metric
    // would read open for good. Should the node be master again, it starts with a new one.
    client.on('refresh', () => {
      const masters = new Set(client.slots.map((nodes) => nodes[0]));
      for (const [target, entry] of breakers) {
        if (masters.has(target)) continue;
        breakers.delete(target);
        entry.dropped = true;
        if (entry.breaker.state !== 'closed')
          report({ kind: 'closed', target, openForMs: now() - entry.openedAt, by: 'failover' });
      }
    });
  }

  return {
    run(key, call) {
      const entry = breakerOf(targetOf(key));
      return entry.breaker.run(call, (error) => {
        if (!isInfrastructureFailure(error)) return false;
        entry.lastFailure = error;
        return true;
      });
    },
  };
}

/** The slot ioredis routes a command on `key` by (its own CRC16 of the key or its hash tag). */
function slotOf(key: string): number {
  return new Command('exists', [key]).getSlot();
}

/**
 * Error replies by which Redis says it cannot serve at all just now, rather than answering
 * this command: the Cluster is down, the dataset is loading, a replica lost its master, the
 * node was demoted to a replica (a failover), or a script has it busy.
 */
const UNSERVING_REPLIES = ['CLUSTERDOWN', 'LOADING', 'MASTERDOWN', 'READONLY', 'BUSY'];

/**
 * Whether a failed call says Redis is unavailable (counts toward a breaker) rather than
 * answering. Anything that is not an error reply is the client's or the socket's: a
 * timeout (ioredis's or the runner's own bound), a refused, reset or closed connection, a
 * Cluster without a route or out of redirections. An error reply is Redis answering (a
 * script's error, WRONGTYPE, NOSCRIPT, OOM, NOPERM), except the few above; TRYAGAIN is an
 * answer too: a slot in migration, which the client retries, on a master that serves.
 */
export function isInfrastructureFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name !== 'ReplyError') return true;
  const word = error.message.split(' ', 1)[0] ?? '';
  return UNSERVING_REPLIES.includes(word);
}

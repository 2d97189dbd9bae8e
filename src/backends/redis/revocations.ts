import type { Redis } from 'ioredis';
import type { Revocation, SubscriptionStart } from '../../credentials/credential-store.js';
import type { Unlock } from '../../protection/lockout.js';
import type { StoreLog } from './client.js';
import { parseRevocationMessage } from './revocation-message.js';
import { nodeAddress, type SubscriberConnections } from './subscriber-connections.js';

/** How often the standing subscription's connection is sent a PING. */
const HEARTBEAT_MS = 1_000;

/**
 * How long a connection may take to connect and subscribe, and a PING to be answered, before
 * the connection is dropped and another made. Above the command timeout of requests on
 * purpose: each drop costs a cache flush, which a server merely slow for a moment is not worth.
 */
export const SUBSCRIBER_TIMEOUT_MS = 3_000;

/** The subscription to the revocation channel: its own connection, closed with the store. */
export interface RevocationSubscription {
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /** Makes each connection (subscriber-connections.ts). */
  readonly connections: SubscriberConnections;
  /** layout.ts `channel`. */
  readonly channel: string;
  /** Every revocation any gateway or writer publishes, with its publish time when it has one. */
  readonly listener: (revocation: Revocation, publishedAtMs: number | undefined) => void;
  /** Every lockout an operator lifted (`keys unlock`); none: unlocks are ignored. */
  readonly unlocked?: ((unlock: Unlock) => void) | undefined;
  /** Each time the subscription stands: `first`, then `again` after each loss. */
  readonly flush: (start: SubscriptionStart) => void;
  readonly log?: StoreLog | undefined;
  readonly now?: () => number;
}

/**
 * Keeps one connection subscribed to the revocation channel (classic SUBSCRIBE: a Cluster
 * broadcasts each PUBLISH to every node, so any one node hears them all; see docs/ARCHITECTURE.md's
 * design decisions for why not sharded pub/sub). Whatever is published while no subscription stands
 * is lost, so each time one stands again `flush` is called, once: the caller drops everything it
 * cached, and a missed revocation cannot outlive the outage.
 *
 * No connection reconnects or resubscribes by itself: when one ends, the next is made here
 * (on a Cluster, on another master), so every flush follows a SUBSCRIBE seen to succeed, and
 * none is missed. ioredis's own Cluster subscriber moves to another node in silence, without
 * an event to flush on (measured: docs/ARCHITECTURE.md, design decisions).
 *
 * A PING every second finds a connection whose server went silent without closing it (a
 * frozen process, a machine gone), which would otherwise look subscribed while the Cluster
 * or the sentinels moved on without it.
 *
 * Logged once per change: `revocations subscribed` (info) the first time, `revocations
 * subscription lost` (warn), `revocations subscribed again` (info, with `down_ms`), each with
 * the node; `revocations not subscribed` (warn) when a server refuses SUBSCRIBE itself.
 */
export function subscribeRevocations(options: SubscribeOptions): RevocationSubscription {
  const { connections, channel } = options;
  const standing = standings(options);
  const refusal = refusalLog(options.log);
  const onMessage = messageRouter(options);
  let closed = false;
  let current: Redis | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let attempts = 0;
  /** The node whose connection ended last: a Cluster's next is made elsewhere. */
  let avoid: string | undefined;
  /** Why the standing connection ended, for the `lost` line. */
  let reason: 'closed' | 'timeout' = 'closed';

  const retry = (): void => {
    attempts += 1;
    retryTimer = setTimeout(open, Math.min(50 * attempts, 1_000));
    retryTimer.unref();
  };

  const subscribed = (redis: Redis, node: string | undefined): NodeJS.Timeout => {
    attempts = 0;
    avoid = undefined;
    refusal.reset();
    standing.stood(node);
    return heartbeatOf(redis, () => (reason = 'timeout'));
  };

  const open = (): void => {
    retryTimer = undefined;
    if (closed) return;
    const next = connections(avoid);
    if (next === undefined) {
      retry();
      return;
    }
    const { redis } = next;
    current = redis;
    follow(redis, {
      channel,
      onMessage,
      refused: (error) => refusal.refused(redis, error),
      subscribed: () => (closed ? undefined : subscribed(redis, peerOf(redis) ?? next.node)),
      ended: () => {
        if (current === redis) current = undefined;
        if (closed) return;
        avoid = next.node ?? standing.node();
        standing.lost(reason);
        reason = 'closed';
        retry();
      },
    });
  };

  open();
  return {
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const redis = current;
      current = undefined;
      if (redis === undefined) return;
      await redis.quit().catch(() => undefined);
      redis.disconnect();
    },
  };
}

interface ConnectionHooks {
  readonly channel: string;
  readonly onMessage: (message: string) => void;
  /** The server refused SUBSCRIBE; the connection is dropped. */
  readonly refused: (error: unknown) => void;
  /** Subscribed: the heartbeat started, if the subscription still wants one. */
  readonly subscribed: () => NodeJS.Timeout | undefined;
  /** The connection ended, whatever the reason: after its timers are stopped. */
  readonly ended: () => void;
}

/** One connection's life: connected and subscribed within SUBSCRIBER_TIMEOUT_MS, or dropped. */
function follow(redis: Redis, hooks: ConnectionHooks): void {
  let heartbeat: NodeJS.Timeout | undefined;
  // A server that accepts and never answers (a frozen process) must not hold the loop.
  const deadline = setTimeout(() => redis.disconnect(), SUBSCRIBER_TIMEOUT_MS);
  deadline.unref();
  redis.on('error', () => {
    // Its 'end' follows; the next connection is made there.
  });
  redis.on('message', (_channel: string, message: string) => hooks.onMessage(message));
  redis.once('end', () => {
    clearTimeout(deadline);
    clearInterval(heartbeat);
    hooks.ended();
  });
  redis
    .connect()
    .then(async () => {
      try {
        await redis.subscribe(hooks.channel);
      } catch (error) {
        hooks.refused(error);
        throw error;
      }
      clearTimeout(deadline);
      heartbeat = hooks.subscribed();
    })
    .catch(() => redis.disconnect());
}

/**
 * Whether a subscription stands, and on which node: each change logged once, and each
 * standing flushed (`first`, then `again`).
 */
function standings(options: SubscribeOptions) {
  const { flush, log } = options;
  const now = options.now ?? Date.now;
  /** The node of the subscription that stands now; undefined while none does. */
  let standing: string | undefined;
  let everStood = false;
  let lostAtMs = 0;
  return {
    node: () => standing,
    stood(node: string | undefined): void {
      standing = node ?? 'unknown';
      if (everStood)
        log?.info(
          { store: 'redis', node: standing, down_ms: now() - lostAtMs },
          'revocations subscribed again',
        );
      else log?.info({ store: 'redis', node: standing }, 'revocations subscribed');
      const start = everStood ? 'again' : 'first';
      everStood = true;
      flush(start);
    },
    lost(reason: 'closed' | 'timeout'): void {
      if (standing === undefined) return;
      log?.warn({ store: 'redis', node: standing, reason }, 'revocations subscription lost');
      lostAtMs = now();
      standing = undefined;
    },
  };
}

/** `revocations not subscribed`, once until a subscription stands again. */
function refusalLog(log: StoreLog | undefined) {
  let logged = false;
  return {
    refused(redis: Redis, error: unknown): void {
      if (redis.status !== 'ready' || logged) return;
      logged = true;
      const cause = error instanceof Error ? error.message : String(error);
      log?.warn({ store: 'redis', node: peerOf(redis), cause }, 'revocations not subscribed');
    },
    reset(): void {
      logged = false;
    },
  };
}

/** Each message of the channel to its listener: a revocation, or an unlock; others ignored. */
function messageRouter(options: SubscribeOptions): (message: string) => void {
  const { listener, unlocked } = options;
  return (message) => {
    const read = parseRevocationMessage(message);
    if (read === undefined) return;
    if ('revocation' in read) listener(read.revocation, read.publishedAtMs);
    else unlocked?.(read.unlock);
  };
}

/** A PING every HEARTBEAT_MS; one that fails drops the connection (`timedOut` first). */
function heartbeatOf(redis: Redis, timedOut: () => void): NodeJS.Timeout {
  const heartbeat = setInterval(() => {
    redis.ping().catch(() => {
      timedOut();
      redis.disconnect();
    });
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return heartbeat;
}

/** The node a connected connection talks to (the master a Sentinel named, say). */
function peerOf(redis: Redis): string | undefined {
  const { remoteAddress, remotePort } = redis.stream;
  return remoteAddress === undefined || remotePort === undefined
    ? undefined
    : nodeAddress(remoteAddress, remotePort);
}

import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisClient } from './client.js';

/** A connection of the revocation subscription's own, not yet connected. */
export interface SubscriberConnection {
  readonly redis: Redis;
  /** The node it goes to (`host:port`), when known before it connects (a Cluster's). */
  readonly node: string | undefined;
}

/** Makes the next connection, avoiding the node given where there is a choice; undefined: none known yet. */
export type SubscriberConnections = (avoid: string | undefined) => SubscriberConnection | undefined;

/** `host:port`, an IPv6 host in brackets. */
export function nodeAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Where the revocation subscription connects, one connection at a time, each made afresh by
 * the subscription (revocations.ts), which also decides when to make the next: none
 * reconnects by itself, so every SUBSCRIBE that stands is one the subscription saw succeed.
 *
 * Standalone and Sentinel: a duplicate of the client, so the URL's server or the master the
 * sentinels name at each connect. Cluster: a plain connection to one master the client knows
 * of, at random (the subscriptions of a fleet spread over the masters, so one master's failure
 * makes only its share resubscribe), other than the node that just failed while another is
 * known. Any node would do for PUBLISH, which a Cluster broadcasts to every node; a master is
 * the node a Cluster client's slot map lists most surely.
 *
 * `timeoutMs` bounds every command on it (SUBSCRIBE, the heartbeat's PING).
 */
export function subscriberConnections(
  client: RedisClient,
  timeoutMs: number,
): SubscriberConnections {
  const own = {
    lazyConnect: true,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    autoResubscribe: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
  } satisfies RedisOptions;
  if (!(client instanceof Cluster))
    return () => ({ redis: client.duplicate(own), node: undefined });
  const cluster = client;
  const inherited = withDefaultReplies(cluster.options.redisOptions ?? {});
  return (avoid) => {
    const masters = cluster.nodes('master').map(({ options: { host = '', port = 0 } }) => ({
      host,
      port,
      node: nodeAddress(host, port),
    }));
    const others = masters.filter((master) => master.node !== avoid);
    const choices = others.length > 0 ? others : masters;
    const chosen = choices[Math.floor(Math.random() * choices.length)];
    if (chosen === undefined) return undefined;
    return {
      redis: new Redis({
        ...inherited,
        host: chosen.host,
        port: chosen.port,
        ...own,
      }),
      node: chosen.node,
    };
  };
}

/**
 * A Cluster node's options (password, TLS, timeouts) with the default reply shapes, in which
 * the 'message' events here are read.
 */
function withDefaultReplies<Options extends { replyMapping?: unknown }>({
  replyMapping: _,
  ...options
}: Options): Omit<Options, 'replyMapping'> {
  return options;
}

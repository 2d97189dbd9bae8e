import { Cluster, type Redis } from 'ioredis';
import type { RedisConnectionState, RedisRole } from '../backend.js';
import type { RedisClient } from './client.js';
import { nodeAddress } from './subscriber-connections.js';

/**
 * What this process's connections to Redis are now, by node, read from the client's own
 * state when asked (a scrape): nothing is done per request, and no timer runs.
 *
 * Standalone: the one server. Sentinel: the master the sentinels named at the last connect,
 * found from the socket (a failover replaces it once the client is ready on the promoted one).
 * The sentinels themselves are not listed: ioredis asks one for the master's address at each
 * connect and closes that connection at once, so there is no connection of theirs to report.
 *
 * Cluster: every node a slot map of the client has listed, with the role the latest map
 * gives it (a promoted replica reads as master from the client's next refresh of the map).
 * ioredis drops a node from its pool when its connection ends, and a failed master leaves
 * the map once it is replaced: such a node stays listed, down, with its last role, so a dead
 * node reads 0 rather than vanishing, until the map lists it again (a restarted old master,
 * as a replica) or the process restarts. Seed nodes count only once a map lists them (a seed
 * named by host name is listed by its address). The client reads the map (CLUSTER SLOTS) at
 * its start and after a redirection or a failed node, and Redis lists a replica there only
 * once it has replicated something: a replica of a Cluster never written to shows from the
 * first map read after the first writes.
 *
 * ioredis connects to a node only when a command goes to it, so replicas (reads go to
 * masters) would never be connected: each node is connected when the client learns of it,
 * which makes the gauge say whether this process reaches every node, at the cost of one idle
 * connection per replica.
 */
export function watchConnectionStates(client: RedisClient): () => RedisConnectionState[] {
  if (client instanceof Cluster) return watchCluster(client);
  if (client.options.sentinels === undefined || client.options.sentinels === null) {
    const node = nodeAddress(client.options.host ?? '127.0.0.1', client.options.port ?? 6379);
    return () => [{ node, role: 'standalone', up: client.status === 'ready' }];
  }
  let master: string | undefined;
  client.on('ready', () => {
    const { remoteAddress, remotePort } = client.stream;
    if (remoteAddress !== undefined && remotePort !== undefined)
      master = nodeAddress(remoteAddress, remotePort);
  });
  return () =>
    master === undefined ? [] : [{ node: master, role: 'master', up: client.status === 'ready' }];
}

function watchCluster(cluster: Cluster): () => RedisConnectionState[] {
  /** Every node a slot map has listed, by the Cluster's key (`host:port`, as breakers name it). */
  const known = new Map<string, RedisRole>();
  const learnMap = (): void => {
    for (const [master, ...replicas] of cluster.slots) {
      if (master !== undefined) known.set(master, 'master');
      for (const replica of replicas) known.set(replica, 'replica');
    }
  };
  // A client handed in may have read its map already.
  learnMap();
  cluster.on('refresh', learnMap);
  const connect = (redis: Redis): void => {
    // A failed connect ends the node's connection (Cluster nodes do not retry): ioredis
    // drops it from the pool and makes it again at the next refresh that lists it.
    if (redis.status === 'wait') redis.connect().catch(() => undefined);
  };
  // The seed nodes were made with the client, before this listener.
  for (const redis of cluster.nodes('all')) connect(redis);
  cluster.on('+node', connect);
  const keyOf = (redis: Redis): string => `${redis.options.host ?? ''}:${redis.options.port ?? 0}`;
  return () => {
    const up = new Set<string>();
    for (const redis of cluster.nodes('all')) if (redis.status === 'ready') up.add(keyOf(redis));
    return [...known].map(([node, role]) => ({ node, role, up: up.has(node) }));
  };
}

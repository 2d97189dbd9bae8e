import type { Socket } from 'node:net';
import { Redis } from 'ioredis';

/** What the guard reaches inside an ioredis client: its connector, private in ioredis's types. */
interface WithConnector {
  connector?: { connect(...args: unknown[]): Promise<Socket> };
}

const guarded = new WeakSet<object>();

/**
 * ioredis hears its socket's errors with `once` listeners (its connector's and its client's),
 * and a TLS socket can emit two: a certificate Node refuses and, read before the socket is
 * closed, the server's alert. The second, unheard, ends the process as an uncaught exception
 * (ioredis PRs #961 and #962 were never merged). Every client ioredis makes, the Sentinel
 * connector's probes and a Cluster's subscriber included, connects through
 * `Redis.prototype.connect`, so the guard wraps it once: each socket gets a listener that
 * keeps hearing, while ioredis's own listeners still report the first error as before.
 */
export function guardSocketErrors(): void {
  const prototype = Redis.prototype as unknown as WithConnector & {
    connect: (this: WithConnector, ...args: unknown[]) => unknown;
  };
  if (guarded.has(prototype)) return;
  guarded.add(prototype);
  const connect = prototype.connect;
  prototype.connect = function (this: WithConnector, ...args: unknown[]): unknown {
    const connector = this.connector;
    if (connector !== undefined && !guarded.has(connector)) {
      guarded.add(connector);
      const open = connector.connect.bind(connector);
      connector.connect = async (...openArgs: unknown[]) => {
        const socket = await open(...openArgs);
        socket.on('error', ignoreLaterErrors);
        return socket;
      };
    }
    return connect.apply(this, args);
  };
}

/** The first error reached ioredis through its own listener; what follows repeats a dead socket's end. */
function ignoreLaterErrors(): void {}

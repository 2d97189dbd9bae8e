import type { Server, Socket } from 'node:net';

export interface TrackedConnections {
  /** The client connections open, from accept on (over TLS, before their handshake too). */
  readonly open: ReadonlySet<Socket>;
  /**
   * Resolves once no client connection has been open, nor opened, for `quietMs` (at once
   * when that is so already), or when `latest` resolves: what a drain waits for before it
   * closes the port. One caller at a time.
   */
  readonly untilIdle: (quietMs: number, latest: Promise<void>) => Promise<void>;
}

/**
 * Follows `server`'s TCP connections: which are open, and when the last one came or went.
 * Closing a listening socket resets every connection still queued on it, and one accepted a
 * moment before has its request on the way; clients told `Connection: close` come straight
 * back. A drain that waits for untilIdle closes the port only once clients stopped coming.
 */
export function trackConnections(server: Server): TrackedConnections {
  const open = new Set<Socket>();
  let changedAtMs = Number.NEGATIVE_INFINITY;
  let onNoneOpen: (() => void) | undefined;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    changedAtMs = performance.now();
    socket.once('close', () => {
      open.delete(socket);
      changedAtMs = performance.now();
      if (open.size === 0) onNoneOpen?.();
    });
  });

  const untilIdle = (quietMs: number, latest: Promise<void>): Promise<void> =>
    new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let ended = false;
      const end = (): void => {
        ended = true;
        onNoneOpen = undefined;
        clearTimeout(timer);
        resolve();
      };
      void latest.then(end);
      const quiet = (): boolean => open.size === 0 && performance.now() - changedAtMs >= quietMs;
      const look = (): void => {
        if (ended) return;
        clearTimeout(timer);
        onNoneOpen = undefined;
        if (open.size > 0) onNoneOpen = look;
        else if (!quiet()) timer = setTimeout(look, changedAtMs + quietMs - performance.now());
        // The last look comes after the event loop has taken in the connections waiting
        // (setImmediate runs after the I/O poll): after a stall, a timer runs before them.
        else setImmediate(() => (quiet() ? end() : look()));
      };
      look();
    });

  return { open, untilIdle };
}

import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { GatewayConfig } from '../config/config-schema.js';
import type { GatewayServer } from '../http/create-server.js';

/** The settings a drain of the API port follows (`server.*`). */
export type DrainTimings = Pick<
  GatewayConfig['server'],
  'drainTimeoutMs' | 'shutdownDelayMs' | 'shutdownQuietMs' | 'keepAliveTimeoutMs'
>;

/**
 * The API port's drain, from the moment it begins: stops accepting once clients stop coming
 * (shutdownDelayMs, then shutdownQuietMs) and waits for in-flight requests, all within the
 * drain timeout. `opening`: the listen still under way, if any (a signal at start-up).
 * Resolves with the milliseconds the timeout leaves (what the last spans may take).
 */
export async function drainApiPort(
  api: GatewayServer,
  timings: DrainTimings,
  opening: Promise<void>,
): Promise<number> {
  api.closeAfterResponses();
  // The drain timeout bounds the whole shutdown, the delay included.
  const { drainTimeoutMs, shutdownDelayMs, shutdownQuietMs, keepAliveTimeoutMs } = timings;
  const endsAtMs = performance.now() + drainTimeoutMs;
  const deadline = elapsed(drainTimeoutMs);
  // However long clients keep coming, what they sent last still has the keep-alive
  // timeout's length to be answered and its connection closed before the deadline.
  const lastAccept = Promise.race([
    elapsed(Math.max(shutdownDelayMs, drainTimeoutMs - keepAliveTimeoutMs)),
    deadline,
  ]);
  await opening;
  // Serving on while a load balancer that polls /readyz stops sending here: a refused
  // connection in that time would be a lost request.
  await Promise.race([elapsed(shutdownDelayMs), deadline]);
  // Then on until no client is connected, nor connects, for shutdownQuietMs. Closing the
  // port resets the connections queued on it, and one accepted a moment before has its
  // request on the way: so it stays open while clients still come, each one that comes
  // back after the `Connection: close` of its last answer, or that a balancer still sends.
  await api.untilIdle(shutdownQuietMs, lastAccept);
  await drain(api.server, deadline, () => api.closeAllConnections());
  return endsAtMs - performance.now();
}

/**
 * Stops accepting, waits until every connection has closed by itself, then cuts whatever is
 * left at `deadline`. Idle keep-alive connections are not swept: the client may be sending
 * its next request on one at this very moment, and a close then loses that request (RFC
 * 9112 §9.6 leaves the race to the server that closes). Each closes either after a response
 * that said `Connection: close` or when Node's keep-alive timer, the timeout the gateway
 * advertised, expires. `cutAll` cuts what is left (a TLS server's must include the
 * connections still in their handshake).
 */
export async function drain(
  server: Server,
  deadline: Promise<void>,
  cutAll: () => void = () => server.closeAllConnections(),
): Promise<void> {
  // http.Server's close() also closes the idle connections (Node 19+): the base class only
  // stops accepting, and calls back once the last connection is gone.
  const closed = new Promise<void>((resolve) => {
    if (server.listening) NetServer.prototype.close.call(server, () => resolve());
    else resolve();
  });
  await Promise.race([closed, deadline]);
  cutAll();
  await closed;
}

/** Resolves `ms` from now, keeping no process alive for it. */
function elapsed(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

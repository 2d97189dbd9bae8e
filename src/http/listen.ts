import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A port that could not be opened, named by its address and its role ("API port"). */
export class ListenError extends Error {
  /** `host:port`, brackets around an IPv6 host. */
  readonly address: string;
  readonly listener: string;
  /** The system error code (EADDRINUSE, EACCES...), when there is one. */
  readonly code: string | undefined;
  constructor(listener: string, host: string, port: number, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const address = formatAddress(host, port);
    super(`cannot listen on ${address} (${listener}): ${listenFailureReason(code, cause)}`, {
      cause,
    });
    this.name = 'ListenError';
    this.address = address;
    this.listener = listener;
    this.code = code;
  }
}

export function formatAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** What an operator should read for the usual ways a listen fails. */
export function listenFailureReason(code: string | undefined, cause: unknown): string {
  switch (code) {
    case 'EADDRINUSE':
      return 'address already in use';
    case 'EACCES':
      return 'permission denied (ports below 1024 need privileges)';
    case 'EADDRNOTAVAIL':
      return 'address not available on this machine';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    default:
      return cause instanceof Error ? cause.message : String(cause);
  }
}

/**
 * Resolves with the bound port (useful with port 0); rejects with a ListenError naming the
 * address and `listener`, the role the port plays.
 */
export function listenOn(
  server: Server,
  host: string,
  port: number,
  listener = 'listener',
): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => reject(new ListenError(listener, host, port, error));
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting and resolves once every connection is gone (a server not listening: at once). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

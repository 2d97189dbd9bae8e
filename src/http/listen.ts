import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Resolves with the bound port (useful with port 0). */
export function listenOn(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/** Stop accepting, let in-flight requests finish, then cut whatever is left. */
export async function drain(server: Server, timeoutMs: number): Promise<void> {
  const closed = closeServer(server);
  const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref());
  await Promise.race([closed, deadline]);
  clearInterval(idleSweep);
  server.closeAllConnections();
  await closed;
}

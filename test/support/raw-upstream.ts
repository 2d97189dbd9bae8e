import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface RawUpstream {
  readonly url: string;
  close(): Promise<void>;
}

/** A TCP server that answers each request's first bytes with `onRequest(socket)`. */
export async function startRawUpstream(onRequest: (socket: Socket) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.once('data', () => onRequest(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

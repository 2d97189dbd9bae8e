import { connect } from 'node:net';

export interface IdleConnection {
  /** Whether the server has closed the connection so far. */
  closed(): boolean;
  destroy(): void;
}

/**
 * A keep-alive connection to the gateway at `port` that has had one answer (the 404 of an
 * unknown path, which keeps the connection open) and then sits idle, until the gateway
 * closes it at `server.keepAliveTimeoutMs` (5 s by default). That close is a later event of
 * the gateway's own clock: an answer that arrives while the connection is still open came
 * well within that time, however slow the machine, without the test reading a clock.
 */
export function openIdleConnection(port: number): Promise<IdleConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let closed = false;
    let received = '';
    socket.on('close', () => (closed = true));
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end));
      if (end === -1 || length === null || received.length < end + 4 + Number(length[1])) return;
      if (!received.startsWith('HTTP/1.1 404 ') || /\r\nconnection: *close/i.test(received)) {
        reject(new Error(`expected a kept-alive 404, got:\n${received}`));
        return;
      }
      socket.on('error', () => undefined);
      resolve({ closed: () => closed, destroy: () => socket.destroy() });
    });
    socket.write('GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  });
}

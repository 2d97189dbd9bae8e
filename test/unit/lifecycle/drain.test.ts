import type { ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGatewayServer, type GatewayServer } from '../../../src/http/create-server.js';
import { drain } from '../../../src/lifecycle/drain.js';

// The drain on its own (issue 15): which connections it leaves to close themselves, and what
// the responses during it say. A deadline that never comes unless a test lets it.

const LIMITS = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 5_000,
  // Far past any wait here: an idle connection that closes did not close by this timer.
  keepAliveTimeoutMs: 60_000,
  maxHeaderCount: 50,
};

let api: GatewayServer | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  const server = api?.server;
  api = undefined;
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A server that answers 200 at once, or holds the request when its path is /hold. */
async function startServer(
  held: ServerResponse[],
): Promise<{ started: GatewayServer; port: number }> {
  const started = createGatewayServer((req, res) => {
    if (req.url === '/hold') held.push(res);
    else res.end('ok');
  }, LIMITS);
  api = started;
  const { server } = started;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { started, port: (server.address() as AddressInfo).port };
}

/**
 * A raw keep-alive connection: `send` resolves with the next whole response's head, or
 * rejects when the connection closes first.
 */
async function openConnection(port: number): Promise<{
  send: (path: string) => Promise<string>;
  closed: Promise<void>;
}> {
  const socket = connect({ port, host: '127.0.0.1' });
  sockets.push(socket);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let received = '';
  let waiting: ((head: string) => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    const end = received.indexOf('\r\n\r\n');
    const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end));
    if (end === -1 || length === null || received.length < end + 4 + Number(length[1])) return;
    const head = received.slice(0, end);
    received = received.slice(end + 4 + Number(length[1]));
    waiting?.(head);
  });
  return {
    send: (path) => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      return new Promise((resolve, reject) => {
        waiting = resolve;
        // A close before the answer is the lost request this file is about: fail, not hang.
        void closed.then(() => reject(new Error('the connection closed before an answer')));
      });
    },
    closed,
  };
}

const never = new Promise<void>(() => undefined);

describe('a drain', () => {
  it('leaves an idle keep-alive connection open: its next request is answered with Connection: close', async () => {
    const { started, port } = await startServer([]);
    const connection = await openConnection(port);
    expect(await connection.send('/')).toMatch(/\r\nconnection: keep-alive/i);

    started.closeAfterResponses();
    const drained = drain(started.server, never);
    const head = await connection.send('/');
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toMatch(/\r\nconnection: close/i);
    await connection.closed;
    await drained;
  });

  it('answers a request held when it began with Connection: close, and ends once that connection is gone', async () => {
    const held: ServerResponse[] = [];
    const { started, port } = await startServer(held);
    const connection = await openConnection(port);
    const answered = connection.send('/hold');
    await expect.poll(() => held.length).toBe(1);

    started.closeAfterResponses();
    const drained = drain(started.server, never);
    held[0]?.end('ok');
    expect(await answered).toMatch(/\r\nconnection: close/i);
    await drained;
  });

  it('cuts what is still open at the deadline', async () => {
    const { started, port } = await startServer([]);
    const connection = await openConnection(port);
    await connection.send('/');
    let expire: () => void = () => undefined;
    const deadline = new Promise<void>((resolve) => (expire = resolve));

    const drained = drain(started.server, deadline);
    expire();
    await drained;
    await connection.closed;
  });
});

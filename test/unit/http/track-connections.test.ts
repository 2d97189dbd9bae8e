import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trackConnections, type TrackedConnections } from '../../../src/http/track-connections.js';

/** Never resolves: a wait bounded by nothing but the connections. */
const NEVER = new Promise<void>(() => undefined);

let server: Server | undefined;
const clients: Socket[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  const open = server;
  server = undefined;
  if (open !== undefined) await new Promise<void>((resolve) => open.close(() => resolve()));
});

/** An echo server on a loopback port, its connections tracked. */
async function trackedServer(): Promise<{ port: number; tracked: TrackedConnections }> {
  const echo = createServer((socket) => socket.pipe(socket));
  server = echo;
  const tracked = trackConnections(echo);
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
  return { port: (echo.address() as AddressInfo).port, tracked };
}

/** A client whose connection the server has accepted. */
async function connected(port: number): Promise<Socket> {
  const client = connect({ port, host: '127.0.0.1' });
  clients.push(client);
  const accepted = once(server as Server, 'connection');
  await once(client, 'connect');
  await accepted;
  return client;
}

/** One exchange with the echo server: the event loop has turned meanwhile, I/O included. */
async function roundTrip(client: Socket): Promise<void> {
  const echoed = once(client, 'data');
  client.write('x');
  await echoed;
}

/** Whether `promise` has settled by now (after pending microtasks). */
function settledFlag(promise: Promise<void>): () => boolean {
  let settled = false;
  void promise.then(() => (settled = true));
  return () => settled;
}

describe('untilIdle: when a draining port may close', () => {
  it('resolves at once when no connection was ever open, however long the quiet asked', async () => {
    const { tracked } = await trackedServer();
    await tracked.untilIdle(60_000, NEVER);
    expect(tracked.open.size).toBe(0);
  });

  it('waits while a connection is open, and resolves once it has closed', async () => {
    const { port, tracked } = await trackedServer();
    const client = await connected(port);
    const idle = tracked.untilIdle(0, NEVER);
    const settled = settledFlag(idle);
    await roundTrip(client);
    await roundTrip(client);
    expect(settled()).toBe(false);
    expect(tracked.open.size).toBe(1);
    client.end();
    await idle;
    expect(tracked.open.size).toBe(0);
  });

  it('after the last connection closed, still waits for the quiet: a client told to close comes back', async () => {
    const { port, tracked } = await trackedServer();
    const first = await connected(port);
    first.end();
    await once(first, 'close');
    let latestReached: () => void = () => undefined;
    const latest = new Promise<void>((resolve) => (latestReached = resolve));
    const idle = tracked.untilIdle(60_000, latest);
    const settled = settledFlag(idle);
    // The client is back, answered, and gone again: the quiet starts over.
    const second = await connected(port);
    await roundTrip(second);
    second.end();
    await once(second, 'close');
    await roundTrip(await connected(port));
    expect(settled()).toBe(false);
    latestReached();
    await idle;
  });

  it('resolves when `latest` does, connections open or not', async () => {
    const { port, tracked } = await trackedServer();
    await connected(port);
    await tracked.untilIdle(0, Promise.resolve());
    expect(tracked.open.size).toBe(1);
  });
});

import type { ServerResponse } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGatewayServer, type GatewayServer } from '../../../src/http/create-server.js';

const LIMITS = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 5_000,
  keepAliveTimeoutMs: 1_000,
  maxHeaderCount: 50,
};

describe('the API server’s in-flight count', () => {
  let api: GatewayServer | undefined;

  afterEach(async () => {
    const server = api?.server;
    api = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** A server that holds every request; `arrived` yields each held response in turn. */
  async function holdingServer(): Promise<{
    port: number;
    arrived: () => Promise<ServerResponse>;
  }> {
    const waiting: ((res: ServerResponse) => void)[] = [];
    const pending: ServerResponse[] = [];
    api = createGatewayServer((_req, res) => {
      const next = waiting.shift();
      if (next === undefined) pending.push(res);
      else next(res);
    }, LIMITS);
    const { server } = api;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      arrived: () => {
        const res = pending.shift();
        return res === undefined
          ? new Promise((resolve) => waiting.push(resolve))
          : Promise.resolve(res);
      },
    };
  }

  function get(port: number): { done: Promise<void>; abort: () => void } {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false });
    const done = new Promise<void>((resolve) => {
      req.on('response', (res) => res.resume().on('end', () => resolve()));
      req.on('error', () => resolve());
    });
    req.end();
    return { done, abort: () => req.destroy() };
  }

  const closed = (res: ServerResponse): Promise<void> =>
    new Promise((resolve) =>
      res.writableFinished || res.destroyed ? resolve() : res.once('close', resolve),
    );

  it('counts requests until their response ends or their client goes away', async () => {
    const { port, arrived } = await holdingServer();
    expect(api?.inFlight()).toBe(0);
    const first = get(port);
    const second = get(port);
    const [a, b] = [await arrived(), await arrived()];
    expect(api?.inFlight()).toBe(2);

    a.end('ok');
    await first.done;
    await closed(a);
    expect(api?.inFlight()).toBe(1);

    second.abort();
    await closed(b);
    expect(api?.inFlight()).toBe(0);
  });
});

import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  ListenError,
  formatAddress,
  listenFailureReason,
  listenOn,
} from '../../../src/http/listen.js';

describe('a listen failure', () => {
  it('names the address, brackets around an IPv6 host', () => {
    expect(formatAddress('127.0.0.1', 8080)).toBe('127.0.0.1:8080');
    expect(formatAddress('::1', 9090)).toBe('[::1]:9090');
    expect(formatAddress('localhost', 80)).toBe('localhost:80');
  });

  it.each([
    ['EADDRINUSE', 'address already in use'],
    ['EACCES', 'permission denied (ports below 1024 need privileges)'],
    ['EADDRNOTAVAIL', 'address not available on this machine'],
    ['ENOTFOUND', 'host name not found'],
  ])('reads %s as "%s"', (code, reason) => {
    expect(listenFailureReason(code, new Error('raw'))).toBe(reason);
  });

  it("falls back to the system error's own message", () => {
    expect(listenFailureReason('EWHATEVER', new Error('listen EWHATEVER: odd'))).toBe(
      'listen EWHATEVER: odd',
    );
    expect(listenFailureReason(undefined, 'no error object')).toBe('no error object');
  });

  it('is one sentence: address, role, reason; the cause is kept', () => {
    const cause = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    const error = new ListenError('API port', '127.0.0.1', 8080, cause);
    expect(error.message).toBe(
      'cannot listen on 127.0.0.1:8080 (API port): address already in use',
    );
    expect(error).toMatchObject({
      address: '127.0.0.1:8080',
      listener: 'API port',
      code: 'EADDRINUSE',
      cause,
    });
  });

  it('listenOn rejects with it when the port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    const server = createHttpServer();
    try {
      const failure: unknown = await listenOn(server, '127.0.0.1', port, 'admin port').catch(
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ListenError);
      expect(failure).toMatchObject({
        message: `cannot listen on 127.0.0.1:${port} (admin port): address already in use`,
        code: 'EADDRINUSE',
      });
      expect(server.listening).toBe(false);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});

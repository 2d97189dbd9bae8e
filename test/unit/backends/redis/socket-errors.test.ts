import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../../../src/backends/redis/client.js';
import { redisConfig } from '../../../support/redis-config.js';

// A TLS socket can emit two errors (a refused certificate, then the server's alert read before
// it closes); ioredis hears only the first. Emitted by hand here: the real pair depends on
// timing, and a second error nobody hears throws where it is emitted.

describe('a Redis client socket that emits a second error', () => {
  let server: Server;
  let port: number;
  const accepted: Socket[] = [];
  beforeAll(async () => {
    // Accepts and never answers: the client's socket exists, its ready check waits.
    server = createServer((socket) => accepted.push(socket)).listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of accepted) socket.destroy();
    server.close();
    await once(server, 'close');
  });

  /** The client's socket once it is connected, and a function that ends the client. */
  async function connectedSocket(redis: Redis): Promise<Socket> {
    redis.on('error', () => undefined);
    await once(redis, 'connect');
    return (redis as unknown as { stream: Socket }).stream;
  }

  const errors = (socket: Socket): void => {
    socket.emit('error', new Error('certificate refused'));
    socket.emit('error', new Error('alert decode error'));
  };

  it('does not throw from a client the gateway made', async () => {
    const redis = createRedisClient(redisConfig(`redis://127.0.0.1:${port}`, 'guard:')) as Redis;
    try {
      const socket = await connectedSocket(redis);
      expect(() => errors(socket)).not.toThrow();
    } finally {
      redis.disconnect();
    }
  });

  it('does not throw from a client ioredis makes for itself afterwards (a Sentinel probe, a Cluster subscriber)', async () => {
    createRedisClient(redisConfig(`redis://127.0.0.1:${port}`, 'guard:')).disconnect();
    const redis = new Redis({ port, host: '127.0.0.1', retryStrategy: () => null });
    try {
      const socket = await connectedSocket(redis);
      expect(() => errors(socket)).not.toThrow();
    } finally {
      redis.disconnect();
    }
  });

  it('still reports the first error to the client', async () => {
    const redis = createRedisClient(redisConfig(`redis://127.0.0.1:${port}`, 'guard:')) as Redis;
    try {
      const socket = await connectedSocket(redis);
      const heard = once(redis, 'error');
      errors(socket);
      expect(((await heard) as Error[])[0]?.message).toBe('certificate refused');
    } finally {
      redis.disconnect();
    }
  });
});

import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyRedisError, createRedisClient } from '../../src/backends/redis/client.js';
import { redisConnectionSchema } from '../../src/config/config-schema.js';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { freePort, spawnRedisServer } from '../support/redis-server.js';

const ca = createTestCa('Redis CA');
const otherCa = createTestCa('Other CA');
const server = ca.issue('redis', { commonName: 'localhost', ...LOOPBACK });

/** The standalone client config of a rediss:// URL, as the YAML gives it. */
const clientConfig = (url: string, caFile: string) =>
  redisConnectionSchema.parse({ url, tls: { caFile }, commandTimeoutMs: 1_000 });

describe('rediss:// with a CA file', () => {
  let redis: ChildProcess | undefined;
  let url = '';
  beforeAll(async () => {
    const port = await freePort();
    // TLS only (the plain port off); no client certificate asked for.
    await spawnRedisServer(
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--tls-cert-file',
        server.certFile,
        '--tls-key-file',
        server.keyFile,
        '--tls-ca-cert-file',
        ca.certFile,
        '--tls-auth-clients',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      (proc) => (redis = proc),
    );
    url = `rediss://localhost:${String(port)}`;
  });
  afterAll(() => {
    redis?.kill('SIGKILL');
    ca.remove();
    otherCa.remove();
  });

  it('connects to a Redis whose certificate chains to the configured CA', async () => {
    const client = createRedisClient(clientConfig(url, ca.certFile));
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  it('refuses a Redis whose certificate chains to another CA, as a TLS failure', async () => {
    const client = createRedisClient(clientConfig(url, otherCa.certFile));
    const failed = new Promise<unknown>((resolve) => client.once('error', resolve));
    try {
      expect(classifyRedisError(await failed)).toBe('tls');
    } finally {
      client.disconnect();
    }
  });

  it('is refused for a redis:// URL, where it would not apply', () => {
    const parsed = redisConnectionSchema.safeParse({
      url: 'redis://localhost:6379',
      tls: { caFile: ca.certFile },
    });
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({ path: ['tls'], message: 'needs a rediss:// url' }),
    ]);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SubscriptionStart } from '../../src/credentials/credential-store.js';
import { recordingLog } from '../support/recording-log.js';
import { redisConfig } from '../support/redis-config.js';
import { serverConfig, startRedisProcess, type RedisProcess } from '../support/redis-process.js';
import { openRedisStore } from '../support/redis-store.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The revocation subscription on a redis-server of this file's own, which it freezes
// (SIGSTOP): the process keeps its sockets open and answers nothing, as a machine that
// vanished without a reset would. Only the subscription's own PING can tell.

let dir: string;
let server: RedisProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-revocation-subscription-'));
  server = await startRedisProcess({
    command: 'redis-server',
    dir,
    config: ([port = 0]) => serverConfig(port, dir).join('\n'),
  });
});

afterAll(async () => {
  if (server?.pid !== undefined) process.kill(server.pid, 'SIGCONT');
  await server?.kill();
  rmSync(dir, { recursive: true, force: true });
});

describe('the revocation subscription', () => {
  it('drops a connection whose server stops answering without closing it, and flushes once when subscribed again', async () => {
    const log = recordingLog();
    const store = openRedisStore(redisConfig(`redis://${server.address}`, uniquePrefix('hb')), {
      log,
    });
    const flushes: SubscriptionStart[] = [];
    try {
      store.subscribe(
        () => undefined,
        (start) => flushes.push(start),
      );
      expect(await log.until('revocations subscribed')).toMatchObject({ node: server.address });
      expect(flushes).toEqual(['first']);

      const pid = server.pid ?? 0;
      process.kill(pid, 'SIGSTOP');
      const lost = await log.until('revocations subscription lost');
      process.kill(pid, 'SIGCONT');
      expect(lost).toMatchObject({ level: 'warn', node: server.address, reason: 'timeout' });

      const again = await log.until('revocations subscribed again');
      expect(again).toMatchObject({ level: 'info', node: server.address });
      expect(flushes).toEqual(['first', 'again']);
    } finally {
      await store.close();
    }
  }, 30_000);
});

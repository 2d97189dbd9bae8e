import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { createMemoryBackend } from '../../src/backends/memory/memory-backend.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { auditLogContract } from '../support/audit-log-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The audit log's contract (test/support/audit-log-contract.ts) on the memory backend and on
// the run's Redis, its streams read raw too.

const redisUrl = inject('redisUrl');

auditLogContract('the memory backend', (clock, settings) => {
  const { audit: log } = createMemoryBackend({ now: () => clock.now(), audit: settings });
  return Promise.resolve({
    log,
    reader: log,
    length: async (subject) => (await log.read({ subject, order: 'asc', count: 1e6 })).length,
    storeTimeMs: () => Promise.resolve(Date.now()),
    close: () => Promise.resolve(),
  });
});

auditLogContract('Redis', (clock, settings) => {
  const prefix = uniquePrefix('audit');
  const layout = redisLayout(prefix);
  const open = () =>
    createRedisBackend(redisConfig(redisUrl, prefix), { now: () => clock.now(), audit: settings });
  const backend = open();
  const reader = open();
  const raw = new Redis(redisUrl);
  const stream = (subject?: string): string =>
    subject === undefined ? layout.auditEvents : layout.subjectEvents(subject);
  return Promise.resolve({
    log: backend.audit,
    reader: reader.audit,
    length: (subject) => raw.xlen(stream(subject)),
    storeTimeMs: async () => {
      const [sec = '0', micro = '0'] = await raw.time();
      return Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    },
    rawEntries: async (subject) =>
      (await raw.xrange(stream(subject), '-', '+')).map(([, fields]) => fields),
    ttlMs: (subject) => raw.pttl(stream(subject)),
    close: async () => {
      raw.disconnect();
      await Promise.all([backend.credentials.close(), reader.credentials.close()]);
    },
  });
});

import type { TestProject } from 'vitest/node';
import { startTestRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/**
 * One Redis for the project's files (integration, end to end); each test file uses its own
 * key prefix. The unit tests need none, so running them alone starts none.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startTestRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}

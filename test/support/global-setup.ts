import type { TestProject } from 'vitest/node';
import { startTestRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** One Redis for the whole run; each test file uses its own key prefix. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startTestRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}

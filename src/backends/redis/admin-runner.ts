import { Cluster } from 'ioredis';
import type { RedisConfig } from '../../config/config-schema.js';
import { createRedisClient, redisAddress, redisSecrets, watchRedisConnection } from './client.js';
import { createScriptRunner, type ScriptRunner } from './run-script.js';

/** Runs a one-off command's `action` on a connection of its own, closed after it. */
export async function withAdminRunner<T>(
  config: RedisConfig,
  action: (runner: ScriptRunner) => Promise<T>,
): Promise<T> {
  const client = createRedisClient(config);
  const connection = watchRedisConnection(client, {
    address: redisAddress(config),
    secrets: redisSecrets(config),
    settleWithinMs: config.commandTimeoutMs,
  });
  try {
    return await action(
      createScriptRunner(client, { timeoutMs: config.commandTimeoutMs, connection }),
    );
  } finally {
    connection.closing();
    await client.quit().catch(() => undefined);
    client.disconnect();
  }
}

/** `text` in a SCAN MATCH pattern, as itself (glob's `*?[]\` escaped). */
const literal = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Every key name of `prefix`: SCAN on each master (a Cluster's keys of one slot are on one
 * master, but which one is not asked: every master is scanned).
 */
export async function scanNames(runner: ScriptRunner, prefix: string): Promise<string[]> {
  const names: string[] = [];
  const nodes = await runner.unkeyed((c) =>
    Promise.resolve(c instanceof Cluster ? c.nodes('master') : [c]),
  );
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await runner.unkeyed(() =>
        node.scan(cursor, 'MATCH', `${literal(prefix)}*`, 'COUNT', 1000),
      );
      names.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return names;
}

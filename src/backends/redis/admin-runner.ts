import type { RedisConfig } from '../../config/config-schema.js';
import { createRedisClient, redisAddress, redisSecrets, watchRedisConnection } from './client.js';
import { globLiteral } from './layout.js';
import { createScriptRunner, type ScriptRunner } from './run-script.js';
import { scanBatches } from './scan-keys.js';

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

/** Every key name of `prefix`, on every master (scan-keys.ts). */
export async function scanNames(runner: ScriptRunner, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const batch of scanBatches(runner, `${globLiteral(prefix)}*`)) names.push(...batch);
  return names;
}

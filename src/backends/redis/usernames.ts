import type { RedisConfig } from '../../config/config-schema.js';
import { scanNames, withAdminRunner } from './admin-runner.js';

/** `text` in a regular expression, as itself. */
const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Every username with a user hash, sorted: today's layout's (`<prefix>{<tag>}:user:<name>`)
 * and, while one is configured, the single-slot layout's, where the gateway still reads them.
 * SCAN visits every master: on a big keyspace this is a walk over all of it.
 */
export function listUsernames(config: RedisConfig): Promise<string[]> {
  return withAdminRunner(config, async (runner) => {
    const names = new Set<string>();
    const tagged = new RegExp(`^${literal(config.keyPrefix)}\\{[0-9a-f]{5}\\}:user:(.+)$`);
    for (const name of await scanNames(runner, config.keyPrefix)) {
      const username = tagged.exec(name)?.[1];
      if (username !== undefined) names.add(username);
    }
    if (config.singleSlotPrefix !== false) {
      const prefix = `${config.singleSlotPrefix}user:`;
      for (const name of await scanNames(runner, prefix)) names.add(name.slice(prefix.length));
    }
    return [...names].sort();
  });
}

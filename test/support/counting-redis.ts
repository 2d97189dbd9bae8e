import { Redis } from 'ioredis';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { createRedisClient } from '../../src/backends/redis/client.js';

/** A real Redis client that counts the commands it sends (each one a round trip or part of one). */
export interface CountingRedis {
  readonly client: Redis;
  /** The names of the commands sent since the last reset, in order. */
  sent(): readonly string[];
  reset(): void;
}

/**
 * The client a store would make for `config`, counting every command it sends: ioredis
 * passes each one (pipelined ones too) through sendCommand.
 */
export function countingRedis(config: RedisConfig): CountingRedis {
  const client = createRedisClient(config);
  if (!(client instanceof Redis)) throw new Error('countingRedis: a standalone config only');
  const names: string[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    names.push(command.name);
    return send(command, stream);
  };
  return {
    client,
    sent: () => names,
    reset: () => names.splice(0),
  };
}

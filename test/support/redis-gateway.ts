import { Redis } from 'ioredis';
import { startEchoUpstream, type EchoUpstream } from './echo-upstream.js';
import { startGateway, type GatewayProcess } from './gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from './gateway-yaml.js';

export interface RedisGateway {
  readonly upstream: EchoUpstream;
  readonly gateway: GatewayProcess;
  /** A client of the same Redis, for what the test writes or reads there itself. */
  readonly redis: Redis;
  /** Stops the gateway and the upstream, and disconnects the client. */
  close(): Promise<void>;
}

/** An echo upstream and a gateway process on the Redis store under `keyPrefix`, with `config`. */
export async function startRedisGateway(
  redisUrl: string,
  keyPrefix: string,
  config: GatewayConfigInput,
): Promise<RedisGateway> {
  const upstream = await startEchoUpstream();
  const redis = new Redis(redisUrl);
  const gateway = await startGateway(
    gatewayYaml({ upstreamUrl: upstream.url, redis: { url: redisUrl, keyPrefix }, config }),
  );
  return {
    upstream,
    gateway,
    redis,
    async close() {
      await gateway.stop();
      await upstream.close();
      redis.disconnect();
    },
  };
}

import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { basicHeader } from './basic-header.js';
import type { LoadClient } from './failover-under-load.js';
import type { HttpAnswer } from './http-answer.js';
import { startEchoUpstream } from './echo-upstream.js';
import { startGateway, writeConfig, type GatewayProcess } from './gateway-process.js';
import { gatewayYaml } from './gateway-yaml.js';
import { runCli } from './run-cli.js';
import { uniquePrefix } from './seed-redis.js';
import { send } from './send.js';
import { untilSubscribers } from './until-subscribers.js';

/**
 * `credentials.redis` for a topology: a Cluster's seed nodes, or the sentinels and the
 * master's name; with `tls`, a topology on TLS only and the CA it chains to.
 */
export type TopologyRedis = (
  | { readonly mode: 'cluster'; readonly nodes: readonly string[] }
  | { readonly mode: 'sentinel'; readonly nodes: readonly string[]; readonly sentinelName: string }
) & { readonly tls?: { readonly caFile: string } };

const CACHE_TTL_SEC = 300;
const SUBSCRIBED_GUARD_MS = 30_000;

export interface KeyPair {
  readonly key: string;
  readonly secret: string;
}

/** Two gateway processes on one topology and key prefix, in front of one echo upstream. */
export interface TopologyGateways {
  readonly a: GatewayProcess;
  readonly b: GatewayProcess;
  readonly keyPrefix: string;
  /** The YAML both gateways run, as a file: the CLI's `--config`. */
  readonly configFile: string;
  /** A pair made as an operator makes one: `keys create --subject … --json`. */
  createPair(subject: string): Promise<KeyPair>;
  /** The status `gateway` answers GET /accounts with `pair`, on a fresh connection. */
  accounts(gateway: GatewayProcess, pair: KeyPair): Promise<number>;
  /**
   * What each path a Redis failover could break answers now: a pair never used yet on B
   * (its record read from Redis), POST /keys on B with `known` (a write), the pair made so on
   * A, and both gateways' /readyz.
   */
  everyPath(known: KeyPair, unused: KeyPair): Promise<Record<string, number>>;
  /**
   * Once both gateways subscribe to the revocation channel (counted on `nodes`, the running
   * Redis servers, wherever each client put its subscription), revokes `pair` through
   * gateway A's API and resolves when gateway B answers it 401. B's cache keeps a pair for
   * 300 s: within a test's timeout only the revocation message can end it there.
   */
  revokeThroughA(pair: KeyPair, nodes: readonly string[]): Promise<void>;
  /** `count` more pairs of `from`'s subject, made through `gateway`'s POST /keys. */
  makePairs(gateway: GatewayProcess, from: KeyPair, count: number): Promise<KeyPair[]>;
  /**
   * A client of `gateway` on one keep-alive connection, sending GET /accounts with `pairs`
   * in turn: each pair until it has an answer other than 503 (while the store cannot
   * answer, a pair not cached stays so), then the next; the last one for good.
   */
  client(gateway: GatewayProcess, pairs: readonly KeyPair[], intervalMs: number): GatewayClient;
  /** Revokes `pair` through gateway A's API (`DELETE /keys/{key}?force=true`, as its owner). */
  deleteOnA(pair: KeyPair): Promise<void>;
  close(): Promise<void>;
}

/** A client of one gateway (see TopologyGateways.client). */
export interface GatewayClient extends LoadClient {
  /** Every answer other than 200, whole (status, headers, body). */
  readonly refused: readonly HttpAnswer[];
  /** Closes its connection. */
  close(): void;
}

export interface TopologyGatewayOptions {
  /**
   * `serve --workers N` for each gateway. With more than one, requests are logged (the
   * access line names the worker that served it: see gateway-logs.ts).
   */
  readonly workers?: number;
}

/**
 * Starts both gateways. An exact-mode credential rate limit far above what any test sends,
 * failing closed: every authenticated request runs a script in Redis and answers 503 when
 * Redis does not answer, instead of passing, so each answer says whether the gateway could use Redis
 * at that moment (cached pairs need no Redis otherwise).
 */
export async function startTopologyGateways(
  name: string,
  redis: TopologyRedis,
  { workers = 1 }: TopologyGatewayOptions = {},
): Promise<TopologyGateways> {
  const keyPrefix = uniquePrefix(name);
  const upstream = await startEchoUpstream();
  const yaml = gatewayYaml({
    upstreamUrl: upstream.url,
    config: {
      credentials: { store: 'redis', redis: { ...redis, nodes: [...redis.nodes], keyPrefix } },
      auth: { basic: { cache: { ttlSec: CACHE_TTL_SEC } } },
      rateLimits: {
        credential: { requests: 1_000_000, periodSec: 1, burst: 1_000_000, mode: 'exact' },
        onStoreError: 'closed',
      },
      logging: { level: 'info', requests: workers > 1 },
    },
  });
  const configFile = writeConfig(yaml);
  const args = workers > 1 ? ['--workers', String(workers)] : [];
  const gateways = await Promise.allSettled([startGateway(yaml, args), startGateway(yaml, args)]);
  const [a, b] = gateways.map((started) =>
    started.status === 'fulfilled' ? started.value : undefined,
  );
  if (a === undefined || b === undefined) {
    await Promise.all([a?.stop(), b?.stop(), upstream.close()]);
    throw gateways.find((started) => started.status === 'rejected')?.reason;
  }
  const accounts = async (gateway: GatewayProcess, pair: KeyPair): Promise<number> => {
    const answer = await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    });
    return answer.status;
  };
  const deleteOnA = async (pair: KeyPair): Promise<void> => {
    const revoked = await send(a.url, `/keys/${pair.key}?force=true`, {
      method: 'DELETE',
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    });
    if (revoked.status !== 200)
      throw new Error(`DELETE answered ${revoked.status}: ${revoked.body}`);
  };
  return {
    a,
    b,
    keyPrefix,
    deleteOnA,
    configFile,
    async createPair(subject) {
      const made = await runCli([
        'keys',
        'create',
        '--subject',
        subject,
        '--config',
        configFile,
        '--json',
      ]);
      if (made.code !== 0)
        throw new Error(`keys create exited ${String(made.code)}: ${made.stderr}`);
      const { key, secret } = JSON.parse(made.stdout) as KeyPair;
      return { key, secret };
    },
    accounts,
    async everyPath(known, unused) {
      const unusedOnB = await accounts(b, unused);
      const made = await send(b.url, '/keys', {
        method: 'POST',
        headers: { authorization: basicHeader(known.key, known.secret) },
      });
      const [fresh] = (made.json as { data?: KeyPair[] } | undefined)?.data ?? [];
      return {
        unusedOnB,
        createdOnB: made.status,
        createdUsedOnA: fresh === undefined ? 0 : await accounts(a, fresh),
        readyA: (await send(a.adminUrl ?? '', '/readyz')).status,
        readyB: (await send(b.adminUrl ?? '', '/readyz')).status,
      };
    },
    async revokeThroughA(pair, nodes) {
      // A guard, not a bound: after a failover a client resubscribes once it has found the
      // new topology, which takes longer than the 5 s default allows under load.
      await untilSubscribers(
        nodes.map((address) => `${redis.tls === undefined ? 'redis' : 'rediss'}://${address}`),
        keyPrefix,
        2,
        SUBSCRIBED_GUARD_MS,
        redis.tls === undefined ? {} : { tls: { ca: readFileSync(redis.tls.caFile) } },
      );
      await deleteOnA(pair);
      for (;;) {
        const status = await accounts(b, pair);
        if (status === 401) return;
        if (status !== 200) throw new Error(`gateway B answered ${status} before the 401`);
      }
    },
    async makePairs(gateway, from, count) {
      const made: KeyPair[] = [];
      for (let i = 0; i < count; i += 1) {
        const answer = await send(gateway.url, '/keys', {
          method: 'POST',
          headers: { authorization: basicHeader(from.key, from.secret) },
        });
        const [pair] = (answer.json as { data?: KeyPair[] } | undefined)?.data ?? [];
        if (answer.status !== 201 || pair === undefined)
          throw new Error(`POST /keys answered ${answer.status}: ${answer.body}`);
        made.push({ key: pair.key, secret: pair.secret });
      }
      return made;
    },
    client(gateway, pairs, intervalMs) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const refused: HttpAnswer[] = [];
      let next = 0;
      return {
        refused,
        intervalMs,
        async request() {
          const pair = pairs[Math.min(next, pairs.length - 1)];
          if (pair === undefined) throw new Error('a client needs a pair');
          const answer = await send(gateway.url, '/accounts', {
            agent,
            headers: { authorization: basicHeader(pair.key, pair.secret) },
          });
          if (answer.status !== 200) refused.push(answer);
          if (answer.status !== 503) next += 1;
          return answer.status;
        },
        close: () => agent.destroy(),
      };
    },
    async close() {
      await Promise.all([a.stop(), b.stop()]);
      await upstream.close();
    },
  };
}

/** everyPath() of gateways that serve everything. */
export const WHOLE = {
  unusedOnB: 200,
  createdOnB: 201,
  createdUsedOnA: 200,
  readyA: 200,
  readyB: 200,
} as const;

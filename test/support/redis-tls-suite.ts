import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisConfig } from '../../src/config/config-schema.js';
import { createRedisBackend } from '../../src/backends/redis/redis-backend.js';
import { createTestCa, LOOPBACK } from './certificates.js';
import { writeConfig } from './gateway-process.js';
import { recordingLog } from './recording-log.js';
import { redisConfig } from './redis-config.js';
import type { RedisTlsFiles } from './redis-process.js';
import { runCli } from './run-cli.js';
import { uniquePrefix } from './seed-redis.js';
import {
  startTopologyGateways,
  type TopologyGateways,
  type TopologyRedis,
} from './topology-gateways.js';

/** A topology a file started on TLS only. */
export interface TlsTopology {
  /** `credentials.redis` without its TLS: the mode and the nodes to name. */
  readonly redis: TopologyRedis;
  /** The data servers' addresses, where the revocation channel's subscribers are counted. */
  readonly servers: readonly string[];
  stop(): Promise<void>;
}

/**
 * The gateway and its Redis backend on a topology whose every process speaks TLS only
 * (Cluster or Sentinel), with `credentials.redis.tls.caFile`: a pair made, let in by two
 * gateways, revoked through one and the revocation heard by the other; and a CA that does not
 * match is named as a TLS failure. `start` starts the topology once, with the files each process presents.
 */
export function describeRedisOverTls(
  label: string,
  start: (tls: RedisTlsFiles) => Promise<TlsTopology>,
): void {
  describe(`${label} on TLS only, with tls.caFile`, () => {
    const ca = createTestCa(`${label} CA`);
    const otherCa = createTestCa('Other CA');
    let topology: TlsTopology;
    beforeAll(async () => {
      // A node presents it to its peers too (the Cluster bus asks for a client certificate).
      const node = ca.issue('redis-node', { commonName: 'localhost', peer: true, ...LOOPBACK });
      topology = await start({
        caFile: ca.certFile,
        certFile: node.certFile,
        keyFile: node.keyFile,
      });
    }, 120_000);
    afterAll(async () => {
      await topology?.stop();
      ca.remove();
      otherCa.remove();
    });

    /** `credentials.redis` under `keyPrefix`, trusting `caFile`. */
    const gatewayRedis = (caFile = ca.certFile): TopologyRedis => ({
      ...topology.redis,
      tls: { caFile },
    });
    const config = (keyPrefix: string, caFile: string): RedisConfig => ({
      ...redisConfig('redis://127.0.0.1:6379', keyPrefix),
      ...gatewayRedis(caFile),
      nodes: [...topology.redis.nodes],
    });

    it('names servers whose certificates chain to another CA as a TLS failure, in its log line and in the cause of every refused operation', async () => {
      const log = recordingLog();
      const backend = createRedisBackend(config(uniquePrefix('tlsca'), otherCa.certFile), { log });
      try {
        expect(await log.until('redis unreachable')).toMatchObject({
          reason: 'tls',
          cause: expect.stringMatching(/certificate/) as unknown,
        });
        expect(backend.credentials.health.ready()).toBe(false);
        // What the 503's warning and `check --connect` name.
        await expect(backend.credentials.getKey('ak_tls1')).rejects.toMatchObject({
          code: 'credential_store_unavailable',
          cause: { why: expect.stringMatching(/^unreachable, TLS failed \(/) as unknown },
        });
      } finally {
        await backend.credentials.close();
      }
    });

    describe('two gateways', () => {
      let gateways: TopologyGateways;
      beforeAll(async () => {
        gateways = await startTopologyGateways('tls', gatewayRedis());
      }, 60_000);
      afterAll(() => gateways?.close());

      it('let a pair made by `keys create` in, and refuse it on B once revoked through A', async () => {
        const pair = await gateways.createPair('tess');
        expect(await gateways.accounts(gateways.a, pair)).toBe(200);
        expect(await gateways.accounts(gateways.b, pair)).toBe(200);
        await gateways.revokeThroughA(pair, topology.servers);
      });

      it('are told by `check --connect` that a CA the servers do not chain to fails TLS', async () => {
        const yaml = readFileSync(gateways.configFile, 'utf8');
        const result = await runCli([
          'check',
          '--connect',
          '--config',
          writeConfig(yaml.replaceAll(ca.certFile, otherCa.certFile)),
        ]);
        expect(result.stdout).toMatch(/^FAIL {2}Redis .*: unreachable, TLS failed \(/m);
      });
    });
  });
}

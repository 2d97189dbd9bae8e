import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWN_PATHS } from '../../src/routing/own-paths.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import {
  findManifest,
  KUBERNETES_DIR,
  renderKustomization,
} from '../support/kubernetes-manifests.js';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { issueToken, send } from '../support/send.js';
import { tempDir } from '../support/temp-dirs.js';

// config/kubernetes/gateway.yaml run by the built gateway as the pod runs it: its password
// from the environment (a Redis that asks for one), its keys from files in the folder the
// Secret is mounted at (here a temp folder), the CLI as `kubectl exec` runs it (GATEWAY_CONFIG,
// no flag); only the addresses are this machine's (loopback instead of 0.0.0.0, the Redis and
// upstream the test starts). The manifests themselves: test/unit/config/kubernetes-manifests.

const PASSWORD = randomBytes(32).toString('hex');
const deployment = findManifest<IDeployment>(renderKustomization(), 'Deployment');
const pod = deployment.spec?.template.spec;
const gatewayContainer = pod?.containers.find((c) => c.name === 'gateway');

let redis: OwnRedis;
let upstream: EchoUpstream;
let gateway: GatewayProcess;
let env: Record<string, string>;

beforeAll(async () => {
  redis = await startOwnRedis({ password: PASSWORD });
  upstream = await startEchoUpstream();
  const secrets = tempDir('kubernetes-secrets-');
  writeFileSync(join(secrets, 'fleet-key'), randomBytes(32).toString('base64'));
  writeFileSync(join(secrets, 'signing-key.pem'), (await generateSigningKey()).pem);
  const yaml = readFileSync(join(KUBERNETES_DIR, 'gateway.yaml'), 'utf8')
    .replaceAll('/etc/accounts-gateway/secrets/', `${secrets}/`)
    .replace('@redis-ha-haproxy:6379', `@127.0.0.1:${redis.port}`)
    .replace('http://accounts-api:8080', upstream.url);
  env = { REDIS_PASSWORD: PASSWORD };
  gateway = await startGateway(yaml, ['--admin-listen', '127.0.0.1:0'], env);
  env.GATEWAY_CONFIG = gateway.configFile;
});

afterAll(async () => {
  killCliChildren();
  await gateway?.stop('SIGKILL');
  await upstream?.close();
  await redis?.stop();
});

describe('config/kubernetes/gateway.yaml, run as the pod runs it', () => {
  it('answers the probes on the admin port: ready once Redis took the password', async () => {
    const ready = await send(gateway.adminUrl ?? '', OWN_PATHS.readiness.path);
    expect({ status: ready.status, body: ready.json }).toEqual({
      status: 200,
      body: { status: 'ready' },
    });
    const health = await send(gateway.adminUrl ?? '', OWN_PATHS.health.path);
    expect({ status: health.status, body: health.json }).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
  });

  it('serves a pair and a token made with the CLI as kubectl exec runs it', async () => {
    const pair = await runCli(['keys', 'create', '--subject', 'alice', '--json'], { env });
    expect(pair.code, pair.stderr).toBe(0);
    const { key, secret } = JSON.parse(pair.stdout) as { key: string; secret: string };
    const viaBasic = await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(key, secret) },
    });
    expect(viaBasic.status).toBe(200);
    expect(upstream.received.at(-1)?.headers['x-auth-subject']).toBe('alice');

    const user = await runCli(['users', 'add', 'alice', '--subject', 'alice'], {
      env,
      stdin: 'a-long-password\n',
    });
    expect(user.code, user.stderr).toBe(0);
    // Signed with the key of the Secret's file: every pod holding it accepts the token.
    const token = await issueToken(gateway.url, 'alice', 'a-long-password');
    const viaBearer = await send(gateway.url, '/accounts', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(viaBearer.status).toBe(200);
  });

  it('exits 0 on SIGTERM within the grace period the pod leaves after its preStop sleep', async () => {
    const graceSec = pod?.terminationGracePeriodSeconds ?? 0;
    const preStopSec = gatewayContainer?.lifecycle?.preStop?.sleep?.seconds ?? 0;
    const started = performance.now();
    expect(await gateway.stop('SIGTERM')).toBe(0);
    expect(performance.now() - started).toBeLessThan((graceSec - preStopSec) * 1000);
  });
});

import bcrypt from 'bcrypt';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { expectKeyIdOf } from '../support/key-ids.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';

// `keys create --count N`: many pairs in one process (one start, the hashes side by side on
// the thread pool), each printed once as it is stored.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('clibulk');
const MAX_ACTIVE = 40;

let dir: string;
let file: string;
let store: CredentialStore;
let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-cli-bulk-'));
  file = join(dir, 'gateway.yaml');
  const yaml = gatewayYaml({
    redis: { url: redisUrl, keyPrefix: prefix },
    config: { keys: { maxActivePerSubject: MAX_ACTIVE } },
  });
  writeFileSync(file, yaml);
  store = openRedisStore(redisConfig(redisUrl, prefix));
  upstream = await startEchoUpstream();
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      config: { logging: { level: 'info', requests: false } },
    }),
  );
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const create = (subject: string, ...args: string[]) =>
  runCli(['keys', 'create', '--subject', subject, '--config', file, ...args]);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('keys create --count', () => {
  it('makes N pairs in one run, a JSON line each with its secret, every one usable', async () => {
    const result = await create(
      'bulk-json',
      '--count',
      '25',
      '--label',
      'load',
      '--scopes',
      'read',
      '--json',
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.split('\n');
    expect(lines.pop()).toBe('');
    const pairs = lines.map((line) => JSON.parse(line) as Record<string, string>);
    expect(pairs).toHaveLength(25);
    for (const pair of pairs) {
      expect(pair).toEqual({
        id: pair.key,
        key: expect.any(String) as unknown,
        secret: expect.stringMatching(/^[0-9A-Za-z]{48}$/) as unknown,
        label: 'load',
        status: 'active',
        subject: 'bulk-json',
        created_at: expect.stringMatching(ISO) as unknown,
        expires_at: null,
        scopes: ['read'],
        last_used_at: null,
        expiring_soon: false,
      });
      expectKeyIdOf(pair.key, 'bulk-json');
    }
    expect(new Set(pairs.map((pair) => pair.key)).size).toBe(25);
    expect(new Set(pairs.map((pair) => pair.secret)).size).toBe(25);
    expect(await store.countActiveKeys('bulk-json')).toBe(25);
    // Every stored hash is of the secret printed beside its key.
    const stored = await Promise.all(pairs.map((pair) => store.getKey(pair.key ?? '')));
    const matches = await Promise.all(
      pairs.map((pair, i) => bcrypt.compare(pair.secret ?? '', stored[i]?.secretHash ?? '')),
    );
    expect(matches.every(Boolean)).toBe(true);
    // And the first and the last through a gateway.
    for (const pair of [pairs[0], pairs[24]]) {
      const res = await send(gateway.url, '/accounts', {
        headers: { authorization: basicHeader(pair?.key ?? '', pair?.secret ?? '') },
      });
      expect(res.status).toBe(200);
    }
  });

  it.each([3, 1])('prints "KEY SECRET" a line without --json (--count %i)', async (count) => {
    const result = await create(`bulk-text-${count}`, '--count', String(count));
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(count);
    for (const line of lines) {
      const [key = '', secret = ''] = line.split(' ');
      expect(line).toBe(`${key} ${secret}`);
      expectKeyIdOf(key, `bulk-text-${count}`);
      expect(await bcrypt.compare(secret, (await store.getKey(key))?.secretHash ?? '')).toBe(true);
    }
  });

  it('refuses with exit 4, making nothing, when the pairs would pass keys.maxActivePerSubject', async () => {
    expect((await create('bulk-cap', '--count', '30')).code).toBe(0);
    const result = await create('bulk-cap', '--count', '11', '--json');
    expect(result.code).toBe(4);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `accounts-gateway: subject bulk-cap has 30 active pairs: 11 more would pass keys.maxActivePerSubject (${MAX_ACTIVE}); none made\n`,
    );
    expect(await store.countActiveKeys('bulk-cap')).toBe(30);
  });

  it.each(['0', '1001', 'ten', '-1', '2.5'])('refuses --count %s with exit 2', async (count) => {
    const result = await create('bulk-usage', '--count', count);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'accounts-gateway: --count must be a whole number from 1 to 1000\n',
    });
  });
});

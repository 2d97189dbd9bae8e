import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killCliChildren, runCli } from '../support/run-cli.js';

// `accounts-gateway config`: the configuration serve would run, as an operator checks it
// before a deploy, with nothing secret on the screen.

afterEach(() => killCliChildren());

let dir: string;
let file: string;

const FILE = `
server:
  port: \${GW_PORT:-8000}
credentials:
  store: redis
  redis:
    url: redis://gateway:\${REDIS_PASSWORD}@10.0.0.5:6379/2
upstreams:
  accounts:
    url: https://svc:upstream-pw@backend.internal:8443/api
tokens:
  signingKey: "\${SIGNING_KEY}"
`;

const ENV = {
  GW_PORT: '8100',
  REDIS_PASSWORD: 'redis-pw-7a1f',
  SIGNING_KEY: '-----BEGIN PRIVATE KEY-----\nsigning-key-material\n-----END PRIVATE KEY-----',
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-cli-config-'));
  file = join(dir, 'gateway.yaml');
  writeFileSync(file, FILE);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('accounts-gateway config', () => {
  it('prints the configuration in effect as YAML: defaults, ${ENV} and overrides applied, secrets redacted', async () => {
    const result = await runCli(
      ['config', '--config', file, '--admin-listen', '127.0.0.1:9300', '--workers', '2'],
      { env: { ...ENV, GATEWAY_UPSTREAM_URL: 'http://ops:env-pw@10.0.0.9:7000/' } },
    );
    expect(result).toMatchObject({ code: 0, stderr: '' });
    for (const secret of ['redis-pw-7a1f', 'signing-key-material', 'gateway:', 'ops:', 'env-pw'])
      expect(result.stdout).not.toContain(secret);
    expect(result.stdout.startsWith(`# The configuration in effect: ${file} `)).toBe(true);
    const shown = parse(result.stdout) as Record<string, Record<string, unknown>>;
    // ${ENV} in the file, then the flags and variables over it.
    expect(shown.server).toMatchObject({ host: '127.0.0.1', port: 8100, workers: 2 });
    expect(shown.admin).toEqual({ enabled: true, host: '127.0.0.1', port: 9300 });
    expect(shown.upstreams).toMatchObject({
      accounts: { url: 'http://[redacted]@10.0.0.9:7000/', engine: 'http-proxy-3' },
    });
    expect(shown.credentials).toMatchObject({
      store: 'redis',
      redis: { url: 'redis://[redacted]@10.0.0.5:6379/2', keyPrefix: 'ag:', commandTimeoutMs: 300 },
    });
    expect(shown.tokens).toMatchObject({ signingKey: '[redacted]', lifetimeSec: 900 });
    // Defaults of settings the file never names.
    expect(shown.lockout).toMatchObject({ enabled: true, windowSec: 3600 });
    expect(shown.routes).toEqual([
      {
        name: 'accounts',
        paths: ['/account', '/accounts', '/accounts/'],
        prefixes: [],
        methods: ['GET', 'HEAD'],
        upstream: 'accounts',
        upstreamPath: '/accounts',
        auth: ['basic', 'bearer'],
        scopes: [],
      },
    ]);
  });

  it('prints the same with --json, and --redis-url wins over the file', async () => {
    const [yaml, json] = await Promise.all([
      runCli(['config', '--config', file, '--redis-url', 'redis://:flag-pw@127.0.0.1:6390'], {
        env: ENV,
      }),
      runCli(
        ['config', '--config', file, '--redis-url', 'redis://:flag-pw@127.0.0.1:6390', '--json'],
        { env: ENV },
      ),
    ]);
    expect(json.code).toBe(0);
    expect(json.stdout).not.toContain('flag-pw');
    const shown = JSON.parse(json.stdout) as { credentials: { redis: { url: string } } };
    expect(shown.credentials.redis.url).toBe('redis://[redacted]@127.0.0.1:6390');
    expect(shown).toEqual(parse(yaml.stdout));
  });

  it('exits 2 with the problems of an invalid configuration, and prints none of it', async () => {
    const result = await runCli(['config', '--config', file], {
      env: { ...ENV, REDIS_PASSWORD: '', GW_PORT: 'eighty' },
    });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('server.port');
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  configOverrides,
  DEFAULT_CONFIG_FILE,
  STORE_FLAGS,
  defaultConfigFile,
  loadConfigFromArgs,
} from '../../../src/commands/config-options.js';
import { given } from '../../support/config-override.js';

const NO_FLAGS = {
  listen: undefined,
  'admin-listen': undefined,
  'redis-url': undefined,
  'upstream-url': undefined,
};

const NO_OVERRIDES = {
  listen: undefined,
  adminListen: undefined,
  redisUrl: undefined,
  upstreamUrl: undefined,
  workers: undefined,
};

describe('configOverrides', () => {
  it('takes no override from an environment without GATEWAY_* variables', () => {
    expect(configOverrides(NO_FLAGS, { PATH: '/usr/bin' })).toEqual(NO_OVERRIDES);
  });

  it('reads the GATEWAY_* variables when no flag is given, each named as its variable', () => {
    expect(
      configOverrides(NO_FLAGS, {
        GATEWAY_LISTEN: '0.0.0.0:8081',
        GATEWAY_ADMIN_LISTEN: '9091',
        GATEWAY_REDIS_URL: 'redis://cache:6379/2',
        GATEWAY_UPSTREAM_URL: 'http://backend:9000',
      }),
    ).toEqual({
      listen: given('GATEWAY_LISTEN', '0.0.0.0:8081'),
      adminListen: given('GATEWAY_ADMIN_LISTEN', '9091'),
      redisUrl: given('GATEWAY_REDIS_URL', 'redis://cache:6379/2'),
      upstreamUrl: given('GATEWAY_UPSTREAM_URL', 'http://backend:9000'),
      workers: undefined,
    });
  });

  it('lets each flag win over its variable, named as the flag', () => {
    expect(
      configOverrides(
        {
          listen: '9000',
          'admin-listen': '127.0.0.1:9001',
          'redis-url': 'redis://flag:6379',
          'upstream-url': 'http://flag:1',
          workers: '2',
        },
        {
          GATEWAY_LISTEN: '8081',
          GATEWAY_ADMIN_LISTEN: '9091',
          GATEWAY_REDIS_URL: 'redis://env:6379',
          GATEWAY_UPSTREAM_URL: 'http://env:1',
        },
      ),
    ).toEqual({
      listen: given('--listen', '9000'),
      adminListen: given('--admin-listen', '127.0.0.1:9001'),
      redisUrl: given('--redis-url', 'redis://flag:6379'),
      upstreamUrl: given('--upstream-url', 'http://flag:1'),
      workers: given('--workers', '2'),
    });
  });

  it('reads only the flags and variables of the options the command takes', () => {
    expect(
      configOverrides(
        { listen: '9000', 'redis-url': 'redis://flag:6379' },
        { GATEWAY_ADMIN_LISTEN: 'not an address', GATEWAY_UPSTREAM_URL: 'ftp://x/' },
        STORE_FLAGS,
      ),
    ).toEqual({ ...NO_OVERRIDES, redisUrl: given('--redis-url', 'redis://flag:6379') });
  });

  it('treats an empty variable as unset', () => {
    expect(
      configOverrides(NO_FLAGS, {
        GATEWAY_LISTEN: '',
        GATEWAY_ADMIN_LISTEN: '',
        GATEWAY_REDIS_URL: '',
        GATEWAY_UPSTREAM_URL: '',
      }),
    ).toEqual(NO_OVERRIDES);
  });
});

describe('defaultConfigFile', () => {
  it('is GATEWAY_CONFIG when it is set', () => {
    expect(defaultConfigFile({ GATEWAY_CONFIG: '/etc/gateway/prod.yaml' })).toBe(
      '/etc/gateway/prod.yaml',
    );
  });

  it('is the embedded config/gateway.yaml when GATEWAY_CONFIG is unset or empty', () => {
    expect(DEFAULT_CONFIG_FILE).toMatch(/[/\\]config[/\\]gateway\.yaml$/);
    expect(defaultConfigFile({})).toBe(DEFAULT_CONFIG_FILE);
    expect(defaultConfigFile({ GATEWAY_CONFIG: '' })).toBe(DEFAULT_CONFIG_FILE);
  });
});

describe('loadConfigFromArgs', () => {
  let dir: string;
  let file: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gw-config-options-'));
    file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'server:\n  port: ${PORT:-1000}\n');
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('applies the GATEWAY_* overrides from the given environment over the file', () => {
    const config = loadConfigFromArgs(
      { config: file, ...NO_FLAGS },
      {
        PORT: '2000',
        GATEWAY_LISTEN: '127.0.0.2:3000',
        GATEWAY_ADMIN_LISTEN: '127.0.0.2:3001',
        GATEWAY_REDIS_URL: 'redis://10.0.0.9:6380',
        GATEWAY_UPSTREAM_URL: 'http://127.0.0.1:7000',
      },
    );
    expect([config.server.host, config.server.port]).toEqual(['127.0.0.2', 3000]);
    expect([config.admin.host, config.admin.port]).toEqual(['127.0.0.2', 3001]);
    expect([config.credentials.store, config.credentials.redis.url]).toEqual([
      'redis',
      'redis://10.0.0.9:6380',
    ]);
    expect(config.upstreams.accounts?.url).toBe('http://127.0.0.1:7000');
  });

  it('substitutes ${VAR} from the given environment, not from the process', () => {
    expect(loadConfigFromArgs({ config: file, ...NO_FLAGS }, { PORT: '2001' }).server.port).toBe(
      2001,
    );
  });
});

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigFile } from '../../../src/config/load-config.js';
import { NGINX, proxyTestsRun } from '../../support/proxy-process.js';

// No Docker engine runs the tests: config/compose.yaml is held against what it relies on
// instead (the Dockerfile, the gateway's schema, the nginx example and its own services).

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONFIG = join(ROOT, 'config');
const COMPOSE_FILE = join(CONFIG, 'compose.yaml');
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

interface Service {
  readonly image?: string;
  readonly build?: { readonly context: string; readonly dockerfile: string };
  readonly entrypoint?: readonly string[];
  readonly command?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
  readonly ports?: readonly string[];
  readonly volumes?: readonly string[];
  readonly network_mode?: string;
  readonly healthcheck?: { readonly test: readonly string[] };
}

const compose = parse(readFileSync(COMPOSE_FILE, 'utf8')) as {
  services: Readonly<Record<string, Service>>;
};
const { gateway, nginx, redis } = compose.services as Record<string, Service>;

/** The exec form (a JSON array) of a Dockerfile instruction of the final stage. */
function dockerfileExec(instruction: string): string[] {
  const line = DOCKERFILE.split('\n').findLast((l) => l.startsWith(`${instruction} [`));
  if (line === undefined) throw new Error(`no ${instruction} [...] in the Dockerfile`);
  return JSON.parse(line.slice(instruction.length + 1)) as string[];
}

/** The container ports a service publishes (`HOST:HOSTPORT:CONTAINERPORT`). */
function publishedPorts(service: Service): number[] {
  return (service.ports ?? []).map((mapping) => Number(mapping.split(':').at(-1)));
}

/** The port of the first http://127.0.0.1:PORT/ URL in a text. */
function loopbackPort(text: string): number {
  const match = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(text);
  if (match === null) throw new Error(`no loopback URL in ${text}`);
  return Number(match[1]);
}

/** The variables the image sets (`ENV NAME=value`), which the container's own add to. */
function imageEnvironment(): Record<string, string> {
  const lines = DOCKERFILE.split('\n').filter((line) => line.startsWith('ENV '));
  return Object.fromEntries(
    lines.map((line): [string, string] => {
      const [name = '', value = ''] = line.slice(4).split('=', 2);
      return [name, value];
    }),
  );
}

/** The gateway's configuration as the gateway container reads it. */
function gatewayConfig() {
  const env = { ...imageEnvironment(), ...gateway?.environment };
  const file = env.GATEWAY_CONFIG;
  if (file === undefined) throw new Error('the gateway service sets no GATEWAY_CONFIG');
  // The image's WORKDIR is /app and the Dockerfile copies config/ there.
  expect(DOCKERFILE).toMatch(/^WORKDIR \/app$/m);
  expect(DOCKERFILE).toMatch(/^COPY config \.\/config$/m);
  expect(file.startsWith('config/')).toBe(true);
  return loadConfigFile(join(ROOT, file), env);
}

describe('config/compose.yaml', () => {
  it('holds the gateway, Redis and the nginx forward-auth example, each with a health check', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['gateway', 'nginx', 'redis']);
    for (const [name, service] of Object.entries(compose.services))
      expect(service.healthcheck?.test.length ?? 0, name).toBeGreaterThan(0);
    expect(redis?.healthcheck?.test.join(' ')).toContain('redis-cli ping');
  });

  it('builds the gateway from the Dockerfile and runs its entrypoint and command', () => {
    expect(gateway?.build).toEqual({ context: '..', dockerfile: 'Dockerfile' });
    expect(
      existsSync(join(dirname(COMPOSE_FILE), gateway?.build?.context ?? '', 'Dockerfile')),
    ).toBe(true);
    expect(gateway?.entrypoint ?? dockerfileExec('ENTRYPOINT')).toEqual(
      dockerfileExec('ENTRYPOINT'),
    );
    expect(gateway?.command).toEqual(dockerfileExec('CMD'));
  });

  it('gives the gateway a configuration the schema accepts, on the Redis service', () => {
    const config = gatewayConfig();
    expect(config.credentials.store).toBe('redis');
    expect(new URL(config.credentials.redis.url).hostname).toBe('redis');
    expect(config.upstreams.accounts?.url).toBe('builtin');
    expect(config.forwardAuth.enabled).toBe(true);
  });

  it('opens the admin port to the compose network, where the Dockerfile exposes it', () => {
    const config = gatewayConfig();
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.admin.host).toBe('0.0.0.0');
    const exposed = /^EXPOSE (.+)$/m.exec(DOCKERFILE)?.[1]?.split(' ').map(Number);
    expect(exposed).toEqual([config.server.port, config.admin.port]);
    expect(publishedPorts(gateway ?? {})).toEqual([config.server.port, config.admin.port]);
    // Published on the host's loopback only: the admin port has no authentication.
    for (const mapping of gateway?.ports ?? []) expect(mapping.startsWith('127.0.0.1:')).toBe(true);
    expect(loopbackPort(gateway?.healthcheck?.test.join(' ') ?? '')).toBe(config.admin.port);
    expect(gateway?.healthcheck?.test.join(' ')).toContain('/readyz');
  });

  it('runs the nginx example as it is, beside the gateway, with the service it protects', () => {
    expect(nginx?.network_mode).toBe('service:gateway');
    const mounted = (nginx?.volumes ?? []).map((volume) => volume.split(':')[0] ?? '');
    expect(mounted).toEqual(['./forward-auth/nginx.conf', './compose.nginx-service.conf']);
    for (const source of mounted) expect(existsSync(join(CONFIG, source)), source).toBe(true);
    const [example, service] = mounted.map((source) => readFileSync(join(CONFIG, source), 'utf8'));
    // The example asks the gateway's API port and passes to the service's port, which the
    // health check probes.
    expect(example).toContain(`server 127.0.0.1:${gatewayConfig().server.port};`);
    const servicePort = loopbackPort(nginx?.healthcheck?.test.join(' ') ?? '');
    expect(service).toContain(`listen 127.0.0.1:${servicePort};`);
    expect(example).toContain(`proxy_pass http://127.0.0.1:${servicePort};`);
    // nginx comes from the shared loopback: the gateway trusts it, and only it.
    expect(gatewayConfig().server.trustedProxies).toEqual(['127.0.0.1']);
  });

  it.runIf(proxyTestsRun(NGINX))('mounts files nginx accepts together in its http block', () => {
    const dir = mkdtempSync(join(tmpdir(), 'compose-nginx-'));
    try {
      // The image includes conf.d/*.conf inside `http { }`; `nginx -t` binds nothing.
      const includes = (nginx?.volumes ?? []).map(
        (volume) => `  include ${join(CONFIG, volume.split(':')[0] ?? '')};`,
      );
      const conf = join(dir, 'nginx.conf');
      writeFileSync(
        conf,
        [
          `pid ${join(dir, 'nginx.pid')};`,
          `error_log ${join(dir, 'error.log')};`,
          'events {}',
          'http {',
          ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
            (kind) => `  ${kind}_temp_path ${join(dir, kind)};`,
          ),
          ...includes,
          '}',
        ].join('\n'),
      );
      expect(() =>
        execFileSync(NGINX, ['-t', '-q', '-p', dir, '-c', conf], { stdio: 'pipe' }),
      ).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the admin host of the image default configuration', () => {
  const DEFAULT_CONFIG = join(CONFIG, 'gateway.yaml');

  it('stays on loopback unless GATEWAY_ADMIN_HOST is set', () => {
    expect(loadConfigFile(DEFAULT_CONFIG, {}).admin.host).toBe('127.0.0.1');
  });

  it('follows GATEWAY_ADMIN_HOST, so that the image EXPOSE 9090 reaches it', () => {
    expect(loadConfigFile(DEFAULT_CONFIG, { GATEWAY_ADMIN_HOST: '0.0.0.0' }).admin.host).toBe(
      '0.0.0.0',
    );
  });
});

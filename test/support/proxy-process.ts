import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './redis-server.js';
import { tempDir } from './temp-dirs.js';
import { untilAccepting } from './port-accepts.js';

// A real nginx or Caddy in front of the gateway, from the config files docs/forward-auth.md shows
// (config/forward-auth/): their example addresses are replaced by the test's own.

export const NGINX = '/usr/sbin/nginx';
export const CADDY = '/usr/bin/caddy';

/**
 * Whether the forward-auth proxy tests run: where the binary is installed, and always in CI
 * (.ci/run installs both, so a missing one there fails the tests instead of hiding them).
 */
export function proxyTestsRun(binary: string): boolean {
  const present = existsSync(binary);
  if (!present && process.env.CI === undefined)
    console.warn(`${binary} is not installed: its forward-auth tests are skipped (CI runs them)`);
  return present || process.env.CI !== undefined;
}

export interface ExampleAddresses {
  /** host:port of the gateway, for the example's 127.0.0.1:8080. */
  readonly gateway: string;
  /** host:port of the protected service, for the example's 127.0.0.1:3000. */
  readonly service: string;
}

/** A file of config/forward-auth/ with the test's addresses (and paths) for the example's. */
export function exampleConfig(
  name: string,
  addresses: ExampleAddresses,
  ...own: readonly { from: string; to: string }[]
): string {
  const file = fileURLToPath(new URL(`../../config/forward-auth/${name}`, import.meta.url));
  let text = readFileSync(file, 'utf8');
  for (const { from, to } of [
    { from: '127.0.0.1:8080', to: addresses.gateway },
    { from: '127.0.0.1:3000', to: addresses.service },
    ...own,
  ]) {
    if (!text.includes(from)) throw new Error(`${name} no longer holds ${from}`);
    text = text.replaceAll(from, to);
  }
  return text;
}

/** Where config/forward-auth/nginx-cache.conf keeps its cache. */
const NGINX_CACHE_PATH = '/run/nginx-accounts-gateway';

export interface ProxyProcess {
  readonly url: string;
  /** What the process wrote to its error log, stdout and stderr so far. */
  output(): string;
  /** Resolves once the process has written `text` to its stdout or stderr. */
  untilOutput(text: string): Promise<void>;
  stop(): Promise<void>;
}

export interface NginxProcess extends ProxyProcess {
  /** The cache directory of nginx-cache.conf (under the test's own directory). */
  readonly cacheDir: string;
}

/**
 * nginx in the foreground, one process, a site config of config/forward-auth/ (nginx.conf,
 * or nginx-cache.conf) inside a minimal `http { }`.
 */
export async function startNginx(
  addresses: ExampleAddresses,
  file = 'nginx.conf',
): Promise<NginxProcess> {
  const port = await freePort();
  const dir = tempDir('forward-auth-nginx-');
  const cacheDir = join(dir, 'accounts-gateway-cache');
  const own = [
    { from: '127.0.0.1:8081', to: `127.0.0.1:${port}` },
    ...(file === 'nginx-cache.conf' ? [{ from: NGINX_CACHE_PATH, to: cacheDir }] : []),
  ];
  writeFileSync(join(dir, 'site.conf'), exampleConfig(file, addresses, ...own));
  const errorLog = join(dir, 'error.log');
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${errorLog} info;`,
      'events { worker_connections 64; }',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `  ${kind}_temp_path ${join(dir, kind)};`,
      ),
      `  include ${join(dir, 'site.conf')};`,
      '}',
    ].join('\n'),
  );
  // One process (no workers switching to another user), in the foreground: stopped by PID.
  const child = spawn(
    NGINX,
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off; master_process off;'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const proxy = await started(child, port, () =>
    existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : '',
  );
  return { ...proxy, cacheDir };
}

export interface CaddyProcess extends ProxyProcess {
  /** Its HOME, XDG_DATA_HOME and XDG_CONFIG_HOME. */
  readonly home: string;
}

/** Caddy with its admin endpoint off, from the example Caddyfile. */
export async function startCaddy(addresses: ExampleAddresses): Promise<CaddyProcess> {
  const port = await freePort();
  const dir = tempDir('forward-auth-caddy-');
  const file = join(dir, 'Caddyfile');
  writeFileSync(
    file,
    exampleConfig('Caddyfile', addresses, {
      from: 'http://127.0.0.1:8082',
      to: `http://127.0.0.1:${port}`,
    }),
  );
  const child = spawn(CADDY, ['run', '--config', file, '--adapter', 'caddyfile'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // Caddy keeps its state under HOME/XDG dirs: the test's own.
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  });
  return { ...(await started(child, port, () => '')), home: dir };
}

/** Resolves once the port accepts a connection; rejects if the process exits first. */
async function started(
  child: ChildProcess,
  port: number,
  logFile: () => string,
): Promise<ProxyProcess> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code) =>
      reject(new Error(`exited (${String(code)}) before listening:\n${output}${logFile()}`)),
    ),
  );
  exited.catch(() => undefined);
  await Promise.race([untilAccepting(port), exited]);
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output + logFile(),
    untilOutput: (text) =>
      new Promise((resolve) => {
        const check = (): void => {
          if (!output.includes(text)) return;
          child.stdout?.off('data', check);
          child.stderr?.off('data', check);
          resolve();
        };
        // Registered after the listeners above, so `output` already holds each chunk here.
        child.stdout?.on('data', check);
        child.stderr?.on('data', check);
        check();
      }),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

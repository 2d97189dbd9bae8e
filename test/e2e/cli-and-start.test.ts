import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { PortalClient } from '../support/portal-client.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import {
  BASIC_CHALLENGE,
  BEARER_CHALLENGE,
  expectGatewayError,
  GENERATED_REQUEST_ID,
} from '../support/expect-gateway-error.js';
import { CLI, startGateway, writeConfig, onJsonLines } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import { fromFetch } from '../support/http-answer.js';
import { expectKeyIdOf } from '../support/key-ids.js';
import { sendHeldRequest } from '../support/hold-requests.js';
import { freePort } from '../support/redis-server.js';
import { killCliChildren, runCli, runCommand } from '../support/run-cli.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// The built CLI as an operator runs it: `check`, `serve` on the embedded default config
// (the zero-setup flow of `npm start`), overrides by flag and env, the admin port, the
// secrets that must never reach the log stream, and SIGTERM draining.

const REPO = fileURLToPath(new URL('../..', import.meta.url));

afterEach(() => killCliChildren());

interface Served {
  readonly child: ChildProcess;
  readonly logs: Record<string, unknown>[];
  stdout(): string;
  stderr(): string;
  /** Resolves with the first log line (present or future) that satisfies the predicate. */
  waitForLog(
    predicate: (line: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  /** Resolves with the match once stderr matches. */
  waitForStderr(pattern: RegExp): Promise<RegExpExecArray>;
  /** Sends the signal (once) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const running = new Set<Served>();

/** Spawns `serve` with the given arguments; every wait rejects if the process exits first. */
function spawnServe(args: string[], env: NodeJS.ProcessEnv = {}): Served {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const logs: Record<string, unknown>[] = [];
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      notify();
      resolve(code);
    });
  });
  onJsonLines(child.stdout, (entry) => logs.push(entry));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    notify();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    notify();
  });
  const waitUntil = <T>(probe: () => T | undefined, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const found = probe();
        if (found !== undefined) {
          listeners.delete(check);
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          listeners.delete(check);
          reject(new Error(`gateway exited before ${what}:\n${stdout}\n${stderr}`));
        }
      };
      listeners.add(check);
      check();
    });
  let stopping: Promise<number | null> | undefined;
  const served: Served = {
    child,
    logs,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForLog: (predicate) => waitUntil(() => logs.find(predicate), 'the expected log line'),
    waitForStderr: (pattern) =>
      waitUntil(() => pattern.exec(stderr) ?? undefined, `stderr matched ${String(pattern)}`),
    stop: (signal = 'SIGTERM') => {
      if (stopping === undefined) {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        stopping = exited;
      }
      return stopping;
    },
  };
  running.add(served);
  return served;
}

afterAll(async () => {
  await Promise.all([...running].map((served) => served.stop()));
});

const isListening = (line: Record<string, unknown>): boolean => line.msg === 'gateway listening';

function listeningPort(line: Record<string, unknown>, field: 'port' | 'admin_port'): number {
  const value = line[field];
  expect(typeof value).toBe('number');
  return value as number;
}

describe('accounts-gateway check', () => {
  it('exits 0 and says so for a valid configuration', async () => {
    const file = writeConfig(
      gatewayYaml({
        config: {
          server: { port: 8080 },
          upstreams: { accounts: { url: 'http://127.0.0.1:9', timeoutMs: 1500 } },
        },
      }),
    );
    const result = await runCli(['check', '--config', file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${file}: configuration is valid\n`);
  });

  it('exits 2 and names every problem by its YAML path for an invalid configuration', async () => {
    const yaml = gatewayYaml({
      config: { upstreams: { accounts: { url: 'http://127.0.0.1:9', timeoutMs: 'fast' } } },
    });
    // A key the schema does not know cannot be typed: it is appended as text.
    const file = writeConfig(`${yaml}forwarding:\n  stripEverything: true\n`);
    const result = await runCli(['check', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(file);
    expect(result.stderr).toMatch(/upstreams\.accounts\.timeoutMs: .*number/);
    expect(result.stderr).toContain('forwarding: unknown key stripEverything');
  });

  it('exits 2 for a file that is not YAML, naming the line, the column and the problem', async () => {
    const file = writeConfig('server: { port: 8080\n');
    const result = await runCli(['check', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `accounts-gateway: invalid configuration in ${file}:\n` +
        '  - YAML line 2, column 1: Flow map in block collection must be sufficiently indented and end with a }\n',
    );
  });

  it('exits 2 naming the flag or variable with a bad value, never blaming the file', async () => {
    const listenRule =
      'must be PORT or HOST:PORT (IPv6 in brackets: [::1]:8080), the port from 0 to 65535';
    const cases: [string[], NodeJS.ProcessEnv, string][] = [
      [['--listen', 'abc'], {}, `--listen: ${listenRule}`],
      // A port out of range was reported as server.port of the file.
      [['--listen', '99999'], {}, `--listen: ${listenRule}`],
      [[], { GATEWAY_LISTEN: 'abc' }, `GATEWAY_LISTEN: ${listenRule}`],
      [['--admin-listen', 'admin'], {}, `--admin-listen: ${listenRule}`],
      [['--workers', 'many'], {}, '--workers: must be a whole number from 1 to 256, or auto'],
    ];
    const results = await Promise.all(
      cases.map(([args, env]) => runCli(['check', ...args], { env })),
    );
    expect(results.map(({ code, stderr }) => ({ code, stderr }))).toEqual(
      cases.map(([, , problem]) => ({ code: 2, stderr: `accounts-gateway: ${problem}\n` })),
    );
  });

  it('exits 2 and refuses to serve an invalid configuration', async () => {
    const file = writeConfig(gatewayYaml({ upstreamUrl: 'ftp://127.0.0.1/' }));
    const result = await runCli(['serve', '--config', file, '--listen', '127.0.0.1:0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('upstreams.accounts.url');
    expect(result.stdout).not.toContain('gateway listening');
  });

  it('accepts the GATEWAY_* variables that the embedded configuration substitutes', async () => {
    // config/gateway.yaml reads ${GATEWAY_HOST}, ${GATEWAY_PORT}, ${GATEWAY_ADMIN_PORT} and
    // ${GATEWAY_LOG_LEVEL}; setting them must not make the CLI refuse to start.
    const result = await runCli(['check'], {
      env: {
        GATEWAY_HOST: '127.0.0.1',
        GATEWAY_PORT: '8181',
        GATEWAY_ADMIN_PORT: '0',
        GATEWAY_LOG_LEVEL: 'debug',
      },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('serve on the embedded default configuration (no --config)', () => {
  let gateway: Served;
  let baseUrl: string;
  let adminUrl: string;
  let curlLine: string;
  let key: string;
  let secret: string;

  const DEMO_ACCOUNTS = {
    result: 'success',
    status: 200,
    meta: { count: 3, limit: 1000, order: 'desc', last_id: 1 },
    data: [
      { id: 3, name: 'Options desk', currency: 'USD' },
      { id: 2, name: 'Savings', currency: 'EUR' },
      { id: 1, name: 'Main trading account', currency: 'USD' },
    ],
  };

  beforeAll(async () => {
    gateway = spawnServe(['--listen', '127.0.0.1:0'], { GATEWAY_ADMIN_PORT: '0' });
    const listening = await gateway.waitForLog(isListening);
    baseUrl = `http://127.0.0.1:${listeningPort(listening, 'port')}`;
    adminUrl = `http://127.0.0.1:${listeningPort(listening, 'admin_port')}`;
    const printed = await gateway.waitForStderr(/try:\s+(curl .*)\n/);
    curlLine = printed[1] ?? '';
    const parsed = /^curl -u '([^':]+):([^']+)' (http:\/\/\S+)$/.exec(curlLine);
    expect(parsed, `unexpected curl line: ${curlLine}`).not.toBeNull();
    [, key = '', secret = ''] = parsed ?? [];
    expect(parsed?.[3]).toBe(`${baseUrl}/accounts`);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('prints a bootstrap key pair and a curl line on stderr, the secret exactly once', () => {
    expectKeyIdOf(key, 'demo');
    expect(secret).toMatch(/^[A-Za-z0-9]{40,}$/);
    const stderr = gateway.stderr();
    expect(stderr).toContain(`key:    ${key}`);
    expect(stderr.split(secret).length - 1).toBe(2); // the `secret:` line and the curl line
    expect(stderr).toMatch(/secret: [A-Za-z0-9]{40,}\n/);
  });

  it("prints the portal's URL and a demo web-app user who signs in there and sees the pair", async () => {
    const printed = /open:\s+(\S+)\n\s+username: (\S+)\n\s+password: (\S+)\n/.exec(
      gateway.stderr(),
    );
    expect(printed?.[1]).toBe(`${baseUrl}/portal/`);
    const [, , username = '', password = ''] = printed ?? [];
    expect(username).toBe('demo');
    const browser = new PortalClient(baseUrl);
    const signIn = await browser.post('/portal/sign-in', { username, password });
    expect(signIn.status).toBe(303);
    const list = await browser.get('/portal/');
    expect(list.status).toBe(200);
    expect(list.body).toContain(`id="pair-${key}"`);
  });

  it('warns in the log that tokens are signed with a key made at start', () => {
    expect(gateway.logs).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(/^tokens are signed with a key generated at start/) as unknown,
      }),
    );
  });

  it("answers the printed request with the spec's envelope of the demo accounts", async () => {
    const res = await fetch(`${baseUrl}/accounts`, {
      headers: { authorization: basicHeader(key, secret) },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-request-id')).toMatch(GENERATED_REQUEST_ID);
    expect(await res.json()).toEqual(DEMO_ACCOUNTS);
  });

  // Never skipped: .ci/run installs curl where it is missing.
  it('works when the printed curl line is run as printed', async () => {
    const result = await runCommand('sh', ['-c', `${curlLine} --silent --show-error --fail`]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(DEMO_ACCOUNTS);
  });

  it('answers a wrong secret for the bootstrap key with 401 invalid_credentials', async () => {
    const res = await fetch(`${baseUrl}/accounts`, {
      headers: { authorization: basicHeader(key, `${secret}x`) },
    });
    expect(res.status).toBe(401);
    // fetch joins the two WWW-Authenticate lines with ", ".
    expect(res.headers.get('www-authenticate')).toBe(`${BASIC_CHALLENGE}, ${BEARER_CHALLENGE}`);
    expectGatewayError(await fromFetch(res), 'invalid_credentials', {
      message: 'The credentials are not valid.',
    });
  });

  it('never writes the secret or its Authorization value to the log stream', async () => {
    const wrongSecret = `${secret.slice(0, -4)}WXYZ`;
    const requests: [string, string, string][] = [
      ['log-ok', '/accounts', basicHeader(key, secret)],
      ['log-ok-alias', '/account?x=1', basicHeader(key, secret)],
      ['log-wrong-secret', '/accounts', basicHeader(key, wrongSecret)],
      ['log-not-found', '/nowhere', basicHeader(key, secret)],
      ['log-bad-scheme', '/accounts', `basic ${secret}`],
    ];
    for (const [requestId, path, authorization] of requests) {
      const res = await fetch(`${baseUrl}${path}`, {
        headers: { authorization, 'x-request-id': requestId, cookie: `s=${secret}` },
      });
      await res.arrayBuffer();
    }
    // Wait for each request's own log line, so the check below sees them all.
    for (const [requestId] of requests) {
      await gateway.waitForLog((line) => line.request_id === requestId);
    }
    const stdout = gateway.stdout();
    for (const forbidden of [
      secret,
      wrongSecret,
      basicHeader(key, secret).slice('Basic '.length),
      basicHeader(key, wrongSecret).slice('Basic '.length),
    ]) {
      expect(stdout).not.toContain(forbidden);
    }
    const okLine = gateway.logs.find((line) => line.request_id === 'log-ok');
    expect(okLine).toMatchObject({ status: 200, subject: 'demo', auth_method: 'basic' });
    const wrongLine = gateway.logs.find((line) => line.request_id === 'log-wrong-secret');
    expect(wrongLine).toMatchObject({ status: 401, error_code: 'invalid_credentials' });
  });

  it('serves /healthz, /readyz and /metrics on the admin port', async () => {
    const health = await fetch(`${adminUrl}/healthz`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    const ready = await fetch(`${adminUrl}/readyz`);
    expect(ready.status).toBe(200);
    await ready.arrayBuffer();
    const metrics = await fetch(`${adminUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('gateway_requests_total');
  });

  it('does not serve the admin endpoints on the API port', async () => {
    const res = await fetch(`${baseUrl}/metrics`);
    expect(res.status).toBe(404);
    expectGatewayError(await fromFetch(res), 'not_found', {
      message: 'No resource matches the request path.',
    });
  });
});

describe('SIGTERM', () => {
  let upstream: EchoUpstream;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
  });

  afterAll(async () => {
    await upstream?.close();
  });

  it('lets a request in flight when SIGTERM arrives complete once the drain has begun, then exits 0', async () => {
    const prefix = uniquePrefix('clidrain');
    await seedKey(inject('redisUrl'), prefix, {
      key: 'ak_cli_drain',
      secret: 's3cret-cli-drain',
      subject: 'alice',
    });
    const body = JSON.stringify({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: 7 },
      data: [{ id: 7 }],
    });
    const gateway = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
      }),
    );
    const held: ServerResponse[] = [];
    try {
      // The upstream holds the request: it is in flight until the test answers it.
      const { inFlight } = await sendHeldRequest(
        upstream,
        held,
        gateway.url,
        basicHeader('ak_cli_drain', 's3cret-cli-drain'),
      );
      const exited = gateway.stop('SIGTERM');
      await gateway.waitForLog('draining');
      // Only now, with the drain under way, does the upstream answer.
      for (const res of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }
      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(body);
      expect(await exited).toBe(0);
      const messages = gateway.logs.map((line) => line.msg);
      expect(messages.indexOf('draining')).toBeLessThan(messages.indexOf('stopped'));
    } finally {
      for (const res of held.splice(0)) res.destroy();
      await gateway.stop('SIGKILL');
    }
  });

  it('exits 0 on a SIGTERM sent right after its start-up output, with nothing in flight', async () => {
    // The curl line is the last thing it prints at start: an operator (or an orchestrator
    // that saw "gateway listening") may stop it at once, and it must drain, not die by the
    // signal.
    const gateway = spawnServe(['--listen', '127.0.0.1:0'], { GATEWAY_ADMIN_PORT: '0' });
    await gateway.waitForStderr(/try:\s+curl /);
    expect(await gateway.stop('SIGTERM')).toBe(0);
    expect(gateway.logs.map((line) => line.msg)).toEqual(
      expect.arrayContaining(['draining', 'stopped']),
    );
  });
});

describe('overrides of the configuration file', () => {
  const prefix = uniquePrefix('clioverride');
  const KEY = 'ak_cli_override';
  const SECRET = 's3cret-cli-override';
  let upstream: EchoUpstream;
  let closedUpstream: string;
  let blocker: Server | undefined;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    closedUpstream = `http://127.0.0.1:${await freePort()}`;
    await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
  });

  afterEach(async () => {
    const server = blocker;
    blocker = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  afterAll(async () => {
    await upstream?.close();
  });

  /** The Redis store with the seeded pair, no admin port, and `config` laid over it. */
  const fileYaml = (
    upstreamUrl: string,
    config: GatewayConfigInput = {},
    signingKeyPem?: string,
  ): string =>
    gatewayYaml({
      upstreamUrl,
      redis: { url: inject('redisUrl'), keyPrefix: prefix },
      ...(signingKeyPem === undefined ? {} : { signingKeyPem }),
      config: { admin: { enabled: false }, ...config },
    });

  const authorized = (url: string): Promise<Response> =>
    fetch(`${url}/accounts`, { headers: { authorization: basicHeader(KEY, SECRET) } });

  it('--listen replaces the host and port of the file', async () => {
    // The file's port is taken: only the flag lets the gateway start.
    const taken = createServer();
    blocker = taken;
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as { port: number }).port;
    const port = await freePort();
    const file = writeConfig(
      fileYaml(upstream.url, { server: { host: '127.0.0.1', port: takenPort } }),
    );
    const gateway = spawnServe(['--config', file, '--listen', `127.0.0.1:${port}`]);
    const listening = await gateway.waitForLog(isListening);
    expect(listening.port).toBe(port);
    const res = await authorized(`http://127.0.0.1:${port}`);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await gateway.stop()).toBe(0);
  });

  it('--admin-listen and GATEWAY_ADMIN_LISTEN move the admin port the file sets, the flag winning', async () => {
    // The file's admin port is taken: only the override lets the gateway start.
    const taken = createServer();
    blocker = taken;
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as { port: number }).port;
    const file = writeConfig(
      fileYaml(upstream.url, {
        server: { host: '127.0.0.1', port: 0 },
        admin: { enabled: true, host: '127.0.0.1', port: takenPort },
      }),
    );
    const servesAdminOn = async (
      port: number,
      args: string[],
      env: NodeJS.ProcessEnv,
    ): Promise<void> => {
      const gateway = spawnServe(['--config', file, ...args], env);
      const listening = await gateway.waitForLog(isListening);
      expect(listening.admin_port).toBe(port);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      await health.arrayBuffer();
      expect(await gateway.stop()).toBe(0);
    };
    const flagPort = await freePort();
    await servesAdminOn(flagPort, ['--admin-listen', `127.0.0.1:${flagPort}`], {
      GATEWAY_ADMIN_LISTEN: String(takenPort),
    });
    const variablePort = await freePort();
    await servesAdminOn(variablePort, [], { GATEWAY_ADMIN_LISTEN: `127.0.0.1:${variablePort}` });
  });

  it('says nothing about a generated signing key when tokens.signingKey is set', async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const file = writeConfig(
      fileYaml(upstream.url, { server: { host: '127.0.0.1', port: 0 } }, pem),
    );
    const gateway = spawnServe(['--config', file]);
    await gateway.waitForLog(isListening);
    expect(gateway.logs.filter((line) => line.level === 40)).toEqual([]);
    expect(await gateway.stop()).toBe(0);
  });

  it('--upstream-url replaces upstreams.accounts.url of the file', async () => {
    const before = upstream.received.length;
    const gateway = await startGateway(fileYaml(closedUpstream), ['--upstream-url', upstream.url]);
    try {
      const res = await authorized(gateway.url);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(upstream.received.length).toBe(before + 1);
    } finally {
      await gateway.stop();
    }
  });

  it('GATEWAY_UPSTREAM_URL replaces upstreams.accounts.url of the file', async () => {
    const before = upstream.received.length;
    const gateway = await startGateway(fileYaml(closedUpstream), [], {
      GATEWAY_UPSTREAM_URL: upstream.url,
    });
    try {
      const res = await authorized(gateway.url);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(upstream.received.length).toBe(before + 1);
    } finally {
      await gateway.stop();
    }
  });

  it('--upstream-url wins over GATEWAY_UPSTREAM_URL', async () => {
    const before = upstream.received.length;
    const gateway = await startGateway(fileYaml(closedUpstream), ['--upstream-url', upstream.url], {
      GATEWAY_UPSTREAM_URL: closedUpstream,
    });
    try {
      const res = await authorized(gateway.url);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(upstream.received.length).toBe(before + 1);
    } finally {
      await gateway.stop();
    }
  });

  it('--redis-url switches a memory-store file to the Redis store at that URL', async () => {
    const yaml = gatewayYaml({
      upstreamUrl: upstream.url,
      config: { admin: { enabled: false }, credentials: { redis: { keyPrefix: prefix } } },
    });
    // Without the flag the memory store knows no such key.
    const memory = await startGateway(yaml);
    try {
      const res = await authorized(memory.url);
      expect(res.status).toBe(401);
      await res.arrayBuffer();
    } finally {
      await memory.stop();
    }
    const gateway = await startGateway(yaml, ['--redis-url', inject('redisUrl')]);
    try {
      expect(gateway.logs.find(isListening)?.store).toBe('redis');
      const res = await authorized(gateway.url);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    } finally {
      await gateway.stop();
    }
  });
});

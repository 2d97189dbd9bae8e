import { spawn, type ChildProcess } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { sendHeldRequest } from '../support/hold-requests.js';
import { within } from '../support/within.js';
import {
  CLI,
  onJsonLines,
  startGateway,
  writeConfig,
  type GatewayProcess,
} from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { freePort } from '../support/redis-server.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// The built gateway's lifecycle at its edges: a port that will not open (the process must
// free what it opened and exit 1 at once, naming the address), readiness during a SIGTERM
// drain (503 `draining`, so a load balancer stops sending traffic), and a second signal
// during the drain (exit at once, logging how many requests that cuts).

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Every gateway process a test started; killed after each test, whatever happened. */
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});

/** Resolves once the process has exited and its output is read to the end. */
function whenClosed(child: ChildProcess): Promise<Ended> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

/** `serve` with only the given YAML (no --listen, no GATEWAY_* from the runner's env). */
function spawnServe(yaml: string): {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  stderr(): string;
  closed: Promise<Ended>;
} {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('GATEWAY_')) env[name] = value;
  const child = spawn(process.execPath, [CLI, 'serve', '--config', writeConfig(yaml)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  children.add(child);
  const logs: Record<string, unknown>[] = [];
  onJsonLines(child.stdout, (entry) => logs.push(entry));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, logs, stderr: () => stderr, closed: whenClosed(child) };
}

/** A plain TCP listener holding a loopback port, as another program would. */
async function occupyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('a port that is already in use', () => {
  let blocker: Server | undefined;

  afterEach(async () => {
    const server = blocker;
    blocker = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('the API port: exits 1 at once, naming the address, with the built-in upstream open', async () => {
    const taken = await occupyPort();
    blocker = taken.server;
    // The default upstream is the built-in reference one: a listener opened before the API
    // port, which kept the process alive.
    const gateway = spawnServe(`
server: { host: 127.0.0.1, port: ${taken.port} }
admin: { host: 127.0.0.1, port: 0 }
`);
    const ended = await within(5_000, 'the gateway to exit', gateway.closed);
    expect(ended).toEqual({ code: 1, signal: null });
    const sentence = `cannot listen on 127.0.0.1:${taken.port} (API port): address already in use`;
    expect(gateway.stderr()).toContain(`accounts-gateway: ${sentence}\n`);
    expect(gateway.logs).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'cannot listen',
        address: `127.0.0.1:${taken.port}`,
        listener: 'API port',
        code: 'EADDRINUSE',
      }),
    );
    expect(gateway.logs.map((line) => line.msg)).not.toContain('gateway listening');
  });

  it('the admin port: exits 1 at once, naming it, and the API port it opened is closed', async () => {
    const taken = await occupyPort();
    blocker = taken.server;
    const apiPort = await freePort();
    const gateway = spawnServe(`
server: { host: 127.0.0.1, port: ${apiPort} }
admin: { host: 127.0.0.1, port: ${taken.port} }
`);
    const ended = await within(5_000, 'the gateway to exit', gateway.closed);
    expect(ended).toEqual({ code: 1, signal: null });
    expect(gateway.stderr()).toContain(
      `accounts-gateway: cannot listen on 127.0.0.1:${taken.port} (admin port): address already in use\n`,
    );
    expect(gateway.logs).toContainEqual(
      expect.objectContaining({
        msg: 'cannot listen',
        address: `127.0.0.1:${taken.port}`,
        listener: 'admin port',
      }),
    );
    // Nothing serves the API after a start reported as failed.
    await expect(fetch(`http://127.0.0.1:${apiPort}/accounts`)).rejects.toThrow();
  });
});

describe('during a drain', () => {
  const KEY = 'ak_lifecycle_drain';
  const SECRET = 's3cret-lifecycle-drain';
  const prefix = uniquePrefix('lifecycle');
  let upstream: EchoUpstream;
  /** Responses the upstream holds open until the test lets them go. */
  const held: ServerResponse[] = [];
  let gateway: GatewayProcess | undefined;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
  });

  afterEach(async () => {
    const child = gateway?.child;
    gateway = undefined;
    for (const res of held.splice(0)) res.destroy();
    if (child === undefined) return;
    const closed = whenClosed(child);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await closed;
  });

  afterAll(async () => {
    await upstream?.close();
  });

  /** A gateway whose upstream holds every request; resolves once one request is held. */
  async function gatewayWithHeldRequest(): Promise<{
    gateway: GatewayProcess;
    inFlight: Promise<Response>;
  }> {
    // A drain timeout far longer than any wait below: only a second signal ends it early.
    const started = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: { server: { drainTimeoutMs: 15_000 } },
      }),
    );
    gateway = started;
    const { inFlight } = await sendHeldRequest(
      upstream,
      held,
      started.url,
      basicHeader(KEY, SECRET),
    );
    return { gateway: started, inFlight };
  }

  it('/readyz answers 503 draining (and gateway_ready reads 0) until the drain ends', async () => {
    const { gateway: running, inFlight } = await gatewayWithHeldRequest();
    const adminUrl = running.adminUrl ?? '';
    const before = await fetch(`${adminUrl}/readyz`);
    expect(before.status).toBe(200);
    await before.arrayBuffer();

    running.child.kill('SIGTERM');
    await within(5_000, 'the draining log line', running.waitForLog('draining'));
    const res = await fetch(`${adminUrl}/readyz`, { headers: { 'x-request-id': 'lb-drain-1' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-request-id')).toBe('lb-drain-1');
    expect(await res.text()).toBe(
      '{"result":"error","status":503,"error":{"code":"draining","message":"The gateway is shutting down; retry on another instance."},"request_id":"lb-drain-1"}',
    );
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^gateway_ready 0$/m);

    // The drain still lets the held request finish, then the process exits 0.
    const exited = whenClosed(running.child);
    for (const res of held.splice(0)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"result":"success"}');
    }
    const answer = await within(5_000, 'the held request', inFlight);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('{"result":"success"}');
    expect(await within(5_000, 'the gateway to exit', exited)).toEqual({ code: 0, signal: null });
  });

  it('a second SIGINT exits 130 at once, logging the requests it cuts', async () => {
    const { gateway: running, inFlight } = await gatewayWithHeldRequest();
    const exited = whenClosed(running.child);
    running.child.kill('SIGINT');
    await within(5_000, 'the draining log line', running.waitForLog('draining'));
    running.child.kill('SIGINT');
    // Well before the 15 s drain timeout: the held request is cut, not waited for.
    expect(await within(5_000, 'the gateway to exit', exited)).toEqual({ code: 130, signal: null });
    expect(running.logs).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'second signal: exiting now',
        signal: 'SIGINT',
        requests_cut: 1,
      }),
    );
    expect(running.logs.map((line) => line.msg)).not.toContain('stopped');
    await expect(inFlight).rejects.toThrow();
  });
});

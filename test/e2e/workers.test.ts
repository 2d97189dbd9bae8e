import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, type ServerResponse } from 'node:http';
import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader, bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { sendHeldRequest } from '../support/hold-requests.js';
import { within } from '../support/within.js';
import { requestLine, untilLog, untilLogs } from '../support/gateway-logs.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { fromFetch, type HttpAnswer } from '../support/http-answer.js';
import { processAlive } from '../support/process-alive.js';
import { startLocalRedis, type TestRedis } from '../support/redis-server.js';
import { removeTempDir, tempDir } from '../support/temp-dirs.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { putUser, seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// serve --workers 2: a primary and two worker processes on one API port, a real Redis and a
// real upstream. Which worker served a request is read from its log line (each worker's
// lines carry its pid), never from anything the API answers.

/** The pid of the worker that logged the request with this X-Request-Id. */
async function servedBy(gateway: GatewayProcess, requestId: string): Promise<number> {
  return (await requestLine(gateway, requestId)).worker_pid as number;
}

/** The worker pids the primary named when the set came up. */
async function workerPidsAtStart(gateway: GatewayProcess): Promise<number[]> {
  const line = await gateway.waitForLog('gateway listening');
  return line.worker_pids as number[];
}

/** Every process a test started (primaries and their workers), killed by PID at the end. */
const pids = new Set<number>();

function killStarted(): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  pids.clear();
}

/** Starts `serve --workers 2` and remembers every pid it (and each later worker) has. */
async function startWorkers(yaml: string, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const gateway = await startGateway(yaml, ['--workers', '2'], env);
  if (gateway.child.pid !== undefined) pids.add(gateway.child.pid);
  gateway.child.stdout?.on('data', () => {
    for (const line of gateway.logs) {
      if (typeof line.pid === 'number') pids.add(line.pid);
      if (typeof line.worker_pid === 'number') pids.add(line.worker_pid);
    }
  });
  for (const pid of await workerPidsAtStart(gateway)) pids.add(pid);
  return gateway;
}

function exitOf(gateway: GatewayProcess): Promise<{ code: number | null; signal: string | null }> {
  const { child } = gateway;
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

let requestCount = 0;
const nextRequestId = (what: string): string => `${what}-${(requestCount += 1)}`;

/** A request (a GET unless `body` is given) on a fresh connection: the next may reach the other worker. */
async function freshGet(
  gateway: GatewayProcess,
  path: string,
  headers: Record<string, string>,
  what = 'req',
  body?: string,
): Promise<{ answer: HttpAnswer; pid: Promise<number> }> {
  const id = nextRequestId(what);
  const answer = await send(gateway.url, path, {
    headers: { ...headers, 'x-request-id': id },
    ...(body === undefined ? {} : { method: 'POST', body }),
  });
  return { answer, pid: servedBy(gateway, id) };
}

/**
 * GETs `path` on fresh connections until both workers have answered one; every answer must
 * have `status`. Bounded: the primary hands new connections to the workers in turn, so two
 * workers are each reached within a few tries.
 */
async function onBothWorkers(
  gateway: GatewayProcess,
  path: string,
  headers: Record<string, string>,
  status: number,
  body?: string,
): Promise<Set<number>> {
  const seen = new Set<number>();
  // In batches: a worker's log lines come every 500 ms, so wait for a batch's at once.
  for (let batch = 0; batch < 6 && seen.size < 2; batch += 1) {
    const pids: Promise<number>[] = [];
    for (let i = 0; i < 6; i += 1) {
      const { answer, pid } = await freshGet(gateway, path, headers, 'req', body);
      expect(answer.status, answer.body).toBe(status);
      pids.push(pid);
    }
    for (const pid of await Promise.all(pids)) seen.add(pid);
  }
  expect(seen.size).toBe(2);
  return seen;
}

/** One keep-alive connection, kept for every request sent through it. */
interface Connection {
  get(path: string, headers?: Record<string, string>, method?: string): Promise<HttpAnswer>;
  readonly pid: number;
  close(): void;
}

function requestOn(
  agent: Agent,
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<HttpAnswer> {
  return send(baseUrl, path, { agent, headers, method });
}

/** A keep-alive connection to each worker: opens connections until both workers hold one. */
async function connectionPerWorker(
  gateway: GatewayProcess,
  headers: Record<string, string>,
): Promise<[Connection, Connection]> {
  const byPid = new Map<number, Connection>();
  for (let i = 0; i < 40 && byPid.size < 2; i += 1) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const id = nextRequestId('conn');
    const first = await requestOn(agent, gateway.url, '/accounts', {
      ...headers,
      'x-request-id': id,
    });
    expect(first.status, first.body).toBe(200);
    const pid = await servedBy(gateway, id);
    if (byPid.has(pid)) {
      agent.destroy();
      continue;
    }
    byPid.set(pid, {
      pid,
      get: (path, extra = headers, method = 'GET') =>
        requestOn(agent, gateway.url, path, extra, method),
      close: () => agent.destroy(),
    });
  }
  const connections = [...byPid.values()];
  if (connections.length !== 2) throw new Error('no connection reached the second worker');
  return connections as [Connection, Connection];
}

/** The value of one sample of the Prometheus text, e.g. `gateway_ready`; 0 when absent. */
function sample(metrics: string, series: string): number {
  for (const line of metrics.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

async function scrape(gateway: GatewayProcess): Promise<string> {
  const res = await fetch(`${gateway.adminUrl ?? ''}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

const ACCOUNTS_200 = 'gateway_requests_total{route="accounts",status="200",source="upstream"}';

let upstream: EchoUpstream;

beforeAll(async () => {
  upstream = await startEchoUpstream();
});

afterEach(() => killCliChildren());

afterAll(async () => {
  killStarted();
  await upstream?.close();
});

describe('serve --workers 2 on one Redis', () => {
  const prefix = uniquePrefix('workers');
  const pair = { key: 'ak_workers_main', secret: 'workers-main-secret-0123', subject: 'wanda' };
  const basic = { authorization: basicHeader(pair.key, pair.secret) };
  let redis: TestRedis;
  let gateway: GatewayProcess;

  /** No signing key configured: the primary makes one and hands it to both workers. */
  const yaml = (extraPaths: string[] = []): string =>
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redis.url, keyPrefix: prefix },
      config: {
        server: { keepAliveTimeoutMs: 60_000 },
        auth: { basic: { cache: { ttlSec: 300 } } },
        routes: [
          {
            name: 'accounts',
            paths: ['/account', '/accounts', '/accounts/', ...extraPaths],
            upstream: 'accounts',
            upstreamPath: '/accounts',
          },
          {
            name: 'posts',
            paths: ['/posts'],
            methods: ['POST'],
            upstream: 'posts',
            upstreamPath: '/accounts',
          },
        ],
        upstreams: { posts: { url: upstream.url, engine: 'undici' } },
      },
    });

  beforeAll(async () => {
    // A Redis of its own: the last test stops it.
    redis = await startLocalRedis();
    await seedKey(redis.url, prefix, pair);
    gateway = await startWorkers(yaml());
  });

  afterAll(async () => {
    killStarted();
    await redis?.stop();
  });

  it('forks two workers that listen on the one API port and both answer requests', async () => {
    const workers = await workerPidsAtStart(gateway);
    expect(new Set(workers).size).toBe(2);
    // The primary accepts and hands connections out in turn (docs/operations.md: workers).
    expect(await gateway.waitForLog('starting workers')).toMatchObject({
      workers: 2,
      scheduling: process.platform === 'win32' ? 'none' : 'round-robin',
    });
    expect(workers).not.toContain(gateway.child.pid);
    const listening = await untilLogs(
      gateway,
      'both workers listening',
      (line) => line.msg === 'worker listening',
      2,
    );
    expect(listening.map((line) => line.worker_pid).sort()).toEqual([...workers].sort());
    expect(listening.map((line) => line.port)).toEqual([gateway.port, gateway.port]);
    const served = await onBothWorkers(gateway, '/accounts', basic, 200);
    expect([...served].sort()).toEqual([...workers].sort());
  });

  it('a POST with a body through the undici engine leaves both workers running', async () => {
    const workers = await workerPidsAtStart(gateway);
    // undici sets req.socket to null once it has consumed the body: each POST killed a worker.
    const served = await onBothWorkers(gateway, '/posts', basic, 200, 'a body');
    expect([...served].sort()).toEqual([...workers].sort());
    expect(gateway.logs.filter((line) => line.msg === 'worker died')).toEqual([]);
  });

  it('/metrics on the one admin port sums the requests of both workers', async () => {
    const before = sample(await scrape(gateway), ACCOUNTS_200);
    // Batches of 8, until both workers have answered some.
    let sent = 0;
    const servedBy = new Set<number>();
    while (servedBy.size < 2 && sent < 48) {
      const pids: Promise<number>[] = [];
      for (let i = 0; i < 8; i += 1) {
        const { answer, pid } = await freshGet(gateway, '/accounts', basic);
        expect(answer.status).toBe(200);
        pids.push(pid);
        sent += 1;
      }
      for (const pid of await Promise.all(pids)) servedBy.add(pid);
    }
    expect(servedBy.size).toBe(2);
    expect(sample(await scrape(gateway), ACCOUNTS_200) - before).toBe(sent);
  });

  it('/readyz is ready when both workers are, and gateway_ready reads 1', async () => {
    const res = await fetch(`${gateway.adminUrl ?? ''}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
    expect(sample(await scrape(gateway), 'gateway_ready')).toBe(1);
  });

  it('signs tokens with one key in both workers when none is configured', async () => {
    await putUser(redis.url, prefix, {
      username: 'wanda',
      subject: pair.subject,
      password: 'wanda-password-1',
    });
    const token = await issueToken(gateway.url, 'wanda', 'wanda-password-1');
    await onBothWorkers(gateway, '/accounts', { authorization: bearerHeader(token) }, 200);
    const logs = gateway.logs.filter((line) => String(line.msg).startsWith('tokens are signed'));
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ role: 'primary' });
  });

  it("a pair revoked through one worker's API is refused next on both workers' connections", async () => {
    // Each worker holds its own subscription to the revocation channel.
    await untilSubscribers(redis.url, prefix, 2);
    const revoked = {
      key: `ak_wrev${randomBytes(6).toString('hex')}`,
      secret: randomBytes(20).toString('hex'),
      subject: 'wendy',
    };
    await seedKey(redis.url, prefix, revoked);
    const headers = { authorization: basicHeader(revoked.key, revoked.secret) };
    const [onA, onB] = await connectionPerWorker(gateway, headers);
    try {
      // Redis no longer holds a hash this secret matches: both workers answer from cache.
      const redisClient = new Redis(redis.url);
      await redisClient.hset(redisLayout(prefix).key(revoked.key, revoked.subject), {
        secret_hash: await bcrypt.hash('another-secret', TEST_BCRYPT_COST),
      });
      redisClient.disconnect();
      for (const connection of [onA, onB])
        expect((await connection.get('/accounts')).status).toBe(200);

      const deleted = await onA.get(`/keys/${revoked.key}?force=true`, headers, 'DELETE');
      expect(deleted.status, deleted.body).toBe(200);
      // The event reaches B's cache through its own subscription, long before the 300 s TTL:
      // so long before that no deadline is needed (the test times out first).
      for (const connection of [onA, onB]) {
        let answer = await connection.get('/accounts');
        while (answer.status === 200) answer = await connection.get('/accounts');
        expectGatewayError(answer, 'invalid_credentials');
      }
    } finally {
      onA.close();
      onB.close();
    }
  });

  it('SIGHUP with an invalid file: no worker changes; with a valid one: every worker uses it', async () => {
    const reloadedBefore = gateway.logs.filter((l) => l.msg === 'configuration reloaded').length;
    writeFileSync(gateway.configFile, `${yaml(['/v2/accounts'])}\nunknownSection: 1\n`);
    gateway.child.kill('SIGHUP');
    const refused = await untilLog(
      gateway,
      'the refused reload',
      (line) => line.msg === 'configuration not reloaded; every worker keeps the running one',
    );
    expect(refused.problems).toEqual(['(root): unknown key unknownSection']);
    // Both workers still serve the old routes.
    await onBothWorkers(gateway, '/v2/accounts', basic, 404);
    await onBothWorkers(gateway, '/accounts', basic, 200);

    writeFileSync(gateway.configFile, yaml(['/v2/accounts']));
    gateway.child.kill('SIGHUP');
    const reloaded = await untilLogs(
      gateway,
      'both workers reloaded',
      (line) => line.msg === 'configuration reloaded',
      reloadedBefore + 2,
    );
    const workers = await workerPidsAtStart(gateway);
    expect(
      reloaded
        .slice(reloadedBefore)
        .map((line) => line.worker_pid)
        .sort(),
    ).toEqual([...workers].sort());
    await onBothWorkers(gateway, '/v2/accounts', basic, 200);
  });

  it('replaces a worker killed with SIGKILL, waiting longer after each quick death', async () => {
    const [victim, survivor] = await workerPidsAtStart(gateway);
    process.kill(victim ?? 0, 'SIGKILL');
    const died = await untilLog(
      gateway,
      'the death of the worker',
      (line) => line.msg === 'worker died' && line.worker_pid === victim,
    );
    expect(died).toMatchObject({ level: 50, signal: 'SIGKILL', code: null, restart_in_ms: 100 });
    // Meanwhile the survivor takes every new connection.
    const meanwhile: Promise<number>[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { answer, pid } = await freshGet(gateway, '/accounts', basic);
      expect(answer.status).toBe(200);
      meanwhile.push(pid);
    }
    expect(new Set(await Promise.all(meanwhile))).toEqual(new Set([survivor]));
    const restarted = await untilLog(
      gateway,
      'the replacement',
      (line) => line.msg === 'worker restarted' && line.worker === died.worker,
    );
    const replacement = restarted.worker_pid as number;
    expect(replacement).not.toBe(victim);
    const served = await onBothWorkers(gateway, '/accounts', basic, 200);
    expect([...served].sort()).toEqual([survivor, replacement].sort());

    // Killed again at once: a crash loop is spaced out, not spun.
    process.kill(replacement, 'SIGKILL');
    const again = await untilLog(
      gateway,
      'the second death',
      (line) => line.msg === 'worker died' && line.worker_pid === replacement,
    );
    expect(again.restart_in_ms).toBe(200);
    await untilLog(
      gateway,
      'the second replacement',
      (line) =>
        line.msg === 'worker restarted' &&
        line.worker === died.worker &&
        line.worker_pid !== replacement,
    );
    const ready = await fetch(`${gateway.adminUrl ?? ''}/readyz`);
    expect(ready.status).toBe(200);
    await ready.arrayBuffer();
  });

  it('/readyz answers 503 credential_store_unavailable when the workers cannot reach Redis', async () => {
    await redis.stop();
    const res = await fetch(`${gateway.adminUrl ?? ''}/readyz`, {
      headers: { 'x-request-id': 'workers-outage' },
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      error: { code: 'credential_store_unavailable' },
      request_id: 'workers-outage',
    });
    expect(sample(await scrape(gateway), 'gateway_ready')).toBe(0);
  });
});

describe('stopping serve --workers 2', () => {
  const prefix = uniquePrefix('workersstop');
  const pair = { key: 'ak_workers_stop', secret: 'workers-stop-secret-0123', subject: 'sam' };
  /** Responses the upstream holds open until the test lets them go. */
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    await seedKey(inject('redisUrl'), prefix, pair);
  });

  afterEach(() => {
    for (const res of held.splice(0)) res.destroy();
    killStarted();
  });

  /** A set whose upstream holds every request; resolves once one request is held. */
  async function workersWithHeldRequest(): Promise<{
    gateway: GatewayProcess;
    inFlight: Promise<Response>;
  }> {
    const gateway = await startWorkers(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: { server: { drainTimeoutMs: 15_000 } },
      }),
    );
    const { inFlight } = await sendHeldRequest(
      upstream,
      held,
      gateway.url,
      basicHeader(pair.key, pair.secret),
    );
    return { gateway, inFlight };
  }

  it('SIGTERM: every worker drains (the held request completes), then the primary exits 0', async () => {
    const { gateway, inFlight } = await workersWithHeldRequest();
    const workers = await workerPidsAtStart(gateway);
    const exited = exitOf(gateway);
    gateway.child.kill('SIGTERM');
    await untilLog(
      gateway,
      'the primary draining',
      (l) => l.msg === 'draining' && l.role === 'primary',
    );
    const ready = await fromFetch(await fetch(`${gateway.adminUrl ?? ''}/readyz`));
    expectGatewayError(ready, 'draining');
    expect(ready.headers['retry-after']).toBe('1');

    for (const res of held.splice(0)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"result":"success"}');
    }
    const answer = await within(5_000, 'the held request', inFlight);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('{"result":"success"}');
    expect(await within(5_000, 'the primary to exit', exited)).toEqual({ code: 0, signal: null });
    const stopped = gateway.logs.filter((line) => line.msg === 'worker stopped');
    expect(stopped.map((line) => line.worker_pid).sort()).toEqual([...workers].sort());
    expect(stopped.map((line) => line.code)).toEqual([0, 0]);
    expect(gateway.logs.filter((line) => line.msg === 'worker died')).toEqual([]);
    expect(gateway.logs.at(-1)).toMatchObject({ msg: 'stopped', role: 'primary' });
  });

  it('a second SIGTERM exits 143 at once, logging the requests the workers had in flight', async () => {
    const { gateway, inFlight } = await workersWithHeldRequest();
    const workers = await workerPidsAtStart(gateway);
    const exited = exitOf(gateway);
    gateway.child.kill('SIGTERM');
    // The worker holding the request has told the primary, and logged, that it has one.
    await untilLog(
      gateway,
      'the busy worker draining',
      (l) => l.msg === 'draining' && l.in_flight === 1,
    );
    gateway.child.kill('SIGTERM');
    expect(await within(5_000, 'the primary to exit', exited)).toEqual({ code: 143, signal: null });
    expect(gateway.logs).toContainEqual(
      expect.objectContaining({
        level: 40,
        role: 'primary',
        msg: 'second signal: exiting now',
        signal: 'SIGTERM',
        requests_cut: 1,
      }),
    );
    await expect(inFlight).rejects.toThrow();
    // No worker outlives the primary: each is gone soon after (a grandchild's exit sends the
    // test no event, so it is polled; the test's timeout ends a worker that stays).
    for (const pid of workers) {
      while (processAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
});

describe('a worker whose output outlives it', () => {
  const prefix = uniquePrefix('workersheld');
  const pair = { key: 'ak_workers_held', secret: 'workers-held-secret-0123', subject: 'hal' };
  const dir = tempDir('workers-held-');
  const holders = join(dir, 'holders');
  /** Its own upstream: the tests before leave the shared one holding requests. */
  let own: EchoUpstream | undefined;

  beforeAll(() => {
    writeFileSync(holders, '');
  });

  /** The processes the workers started holding their output, by PID. */
  const holderPids = (): number[] =>
    readFileSync(holders, 'utf8').split('\n').filter(Boolean).map(Number);

  afterAll(async () => {
    for (const pid of holderPids()) pids.add(pid);
    killStarted();
    await own?.close();
    removeTempDir(dir);
  });

  it('is replaced once it has died, though a process it started still holds its output', async () => {
    await seedKey(inject('redisUrl'), prefix, pair);
    own = await startEchoUpstream();
    // Loaded into every process by NODE_OPTIONS, as an agent would be: in each worker, a child
    // that inherits the worker's stdout and stderr and outlives it (so neither pipe ends).
    const preload = join(dir, 'hold-output.cjs');
    writeFileSync(
      preload,
      `if (require('node:cluster').isWorker) {
  const held = require('node:child_process').spawn('sleep', ['120'], { stdio: ['ignore', 'inherit', 'inherit'] });
  require('node:fs').appendFileSync(${JSON.stringify(holders)}, held.pid + '\\n');
}
`,
    );
    const gateway = await startWorkers(
      gatewayYaml({
        upstreamUrl: own.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
      }),
      { NODE_OPTIONS: `--require ${preload}` },
    );
    const [victim] = await workerPidsAtStart(gateway);
    expect(holderPids()).toHaveLength(2);
    process.kill(victim ?? 0, 'SIGKILL');
    const died = await untilLog(
      gateway,
      'the death of the worker',
      (line) => line.msg === 'worker died' && line.worker_pid === victim,
    );
    expect(died).toMatchObject({ signal: 'SIGKILL', restart_in_ms: 100 });
    await untilLog(
      gateway,
      'its replacement',
      (line) => line.msg === 'worker restarted' && line.worker === died.worker,
    );
    const answer = await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    });
    expect(answer.status).toBe(200);
  });
});

describe('workers and the memory store', () => {
  const MESSAGE =
    'server.workers: the memory store keeps its state in one process; more than one worker needs credentials.store: redis';

  it('check refuses a file with workers: 2 and the memory store (exit 2)', async () => {
    const file = writeConfig(gatewayYaml({ config: { server: { workers: 2 } } }));
    const result = await runCli(['check', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(MESSAGE);
  });

  it('serve --workers 2 refuses the memory store before starting anything (exit 2)', async () => {
    const file = writeConfig(gatewayYaml({ config: { admin: { enabled: false } } }));
    const result = await runCli([
      'serve',
      '--config',
      file,
      '--listen',
      '127.0.0.1:0',
      '--workers',
      'auto',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(MESSAGE);
    expect(result.stdout).toBe('');
  });
});

// Throughput of the per-request path against its peers, on 127.0.0.1 only:
//   bare    http-proxy-3 with a keep-alive agent, no auth (the ceiling)
//   basic   the gateway with a cached Basic pair
//   bearer  the gateway with a cached Bearer token (HS256)
//   caddy   Caddy's basicauth (bcrypt, with its hash cache) + reverse_proxy, when installed
// Each run is bounded (wrk -d), and every process started here is stopped by its PID.
// Run with `npm run bench` (builds first). BENCH_ROUNDS, BENCH_SECONDS and BENCH_CONNECTIONS
// tune it (defaults: 5 rounds of 3 s per scenario, 64 connections).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Jose from 'jose';

const root = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(join(root, 'package.json'));
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));

const UPSTREAM = `
const http = require('node:http');
const body = JSON.stringify({ result: 'success', status: 200, meta: { count: 1, limit: 1000, order: 'desc', last_id: 1 }, data: [{ id: 1 }] });
const server = http.createServer({ keepAliveTimeout: 65000 }, (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => console.log('PORT ' + server.address().port));`;

const BARE_PROXY = `
const http = require('node:http');
const { createProxyServer } = require(${JSON.stringify(require.resolve('http-proxy-3'))});
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const proxy = createProxyServer({ target: process.argv[1], agent });
proxy.on('error', (e, req, res) => { res.writeHead(502); res.end(); });
const server = http.createServer((req, res) => proxy.web(req, res));
server.listen(0, '127.0.0.1', () => console.log('PORT ' + server.address().port));`;

function start(
  command: string,
  args: string[],
  readyPattern: RegExp,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const match = seen.match(readyPattern);
      if (match !== null) {
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ child, match });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${command} exited (${String(code)}): ${seen}`)));
  });
}

interface Run {
  readonly rps: number;
  readonly requests: number;
}

/** One bounded wrk run (any non-2xx fails the bench). */
function wrk(url: string, header: string | undefined, conns = connections): Promise<Run> {
  const args = [
    '-t1',
    `-c${conns}`,
    `-d${seconds}s`,
    ...(header === undefined ? [] : ['-H', header]),
    url,
  ];
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', () => {
      const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
      const requests = /(\d+) requests in/.exec(out);
      const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
      if (rps === null || requests === null) reject(new Error(`wrk failed: ${out}`));
      else if (non2xx !== null)
        reject(new Error(`wrk saw ${non2xx[1]} non-2xx responses from ${url}`));
      else resolve({ rps: Number(rps[1]), requests: Number(requests[1]) });
    });
  });
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100;

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number | undefined): number {
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
    .split(') ')[1]
    ?.split(' ');
  return (Number(fields?.[11]) + Number(fields?.[12])) / CLOCK_TICKS;
}

function rssMiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

function has(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
}

async function main(): Promise<void> {
  if (!has('wrk')) throw new Error('wrk is needed (Debian: apt-get install wrk)');
  const bcrypt = require('bcrypt') as { hash(s: string, cost: number): Promise<string> };
  const jose = (await import(require.resolve('jose'))) as typeof Jose;
  const key = 'ak_benchbenchbenchbenchbench';
  const secret = 'bench-secret-0123456789abcdefghijklmnopqrstuv';
  const hash = await bcrypt.hash(secret, 10);
  const jwtSecret = 'bench-jwt-secret-0123456789abcdefghijklmnop';
  const token = await new jose.SignJWT({ sub: 'bench' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(jwtSecret));
  const basicHeader = `Authorization: Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;

  const upstream = await start(process.execPath, ['-e', UPSTREAM], /PORT (\d+)/);
  const upstreamUrl = `http://127.0.0.1:${upstream.match[1]}`;
  const bare = await start(process.execPath, ['-e', BARE_PROXY, upstreamUrl], /PORT (\d+)/);

  const config = join(dir, 'gateway.yaml');
  writeFileSync(
    config,
    `server: { host: 127.0.0.1, port: 0 }
admin: { enabled: false }
upstreams: { accounts: { url: ${upstreamUrl} } }
auth:
  bearer:
    issuers: [{ name: bench, algorithms: [HS256], secret: ${jwtSecret} }]
credentials:
  store: memory
  seed: { keys: [{ key: ${key}, secretHash: "${hash}", subject: bench }] }
`,
  );
  const gateway = await start(
    process.execPath,
    [join(root, 'dist/cli.js'), 'serve', '--config', config],
    /"port":(\d+)/,
  );
  const gatewayUrl = `http://127.0.0.1:${gateway.match[1]}/accounts`;

  /** `pid`: the proxy whose CPU time a run is charged to. */
  const scenarios: { name: string; url: string; pid: number | undefined; header?: string }[] = [
    { name: 'bare', url: `http://127.0.0.1:${bare.match[1]}/accounts`, pid: bare.child.pid },
    { name: 'basic', url: gatewayUrl, pid: gateway.child.pid, header: basicHeader },
    {
      name: 'bearer',
      url: gatewayUrl,
      pid: gateway.child.pid,
      header: `Authorization: Bearer ${token}`,
    },
  ];
  if (has('caddy')) {
    const caddyHash = (await bcrypt.hash(secret, 10)).replace(/^\$2b\$/, '$2a$');
    const caddyfile = join(dir, 'Caddyfile');
    const port = 20000 + Math.floor(Math.random() * 20000);
    // Caddy 2.6's Caddyfile basicauth takes a base64 bcrypt hash and caches verified pairs.
    writeFileSync(
      caddyfile,
      `{\n  admin off\n  auto_https off\n}\nhttp://127.0.0.1:${port} {\n  basicauth {\n    ${key} ${Buffer.from(caddyHash).toString('base64')}\n  }\n  reverse_proxy ${upstreamUrl}\n}\n`,
    );
    const caddy = await start(
      'caddy',
      ['run', '--config', caddyfile, '--adapter', 'caddyfile'],
      /serving initial configuration|server running/,
    );
    scenarios.push({
      name: 'caddy',
      url: `http://127.0.0.1:${port}/accounts`,
      pid: caddy.child.pid,
      header: basicHeader,
    });
  }

  // Warm-up (JIT, connection pools; the first Basic request pays bcrypt once).
  for (const scenario of scenarios) wrkWarm(scenario.url, scenario.header);
  // This machine's speed drifts from minute to minute (shared cores), so two figures taken
  // one after the other can differ by a third with nothing changed. Three views:
  // - alone: each scenario by itself, in interleaved rounds, median of the rounds;
  // - paired: two scenarios loaded at the same moment (half the connections each), so both
  //   see the same machine; the ratio of their throughputs is the ratio of their costs;
  // - cpu: the proxy's own CPU time (user + system) per request in the alone runs: what a
  //   request costs, whatever else the machine does, and the steadiest of the three.
  //   Caddy spreads that time over both cores, so its throughput ratio and its cost ratio
  //   differ: the cost ratio is per core.
  const byName = new Map(scenarios.map((s) => [s.name, s]));
  const alone = new Map<string, number[]>(scenarios.map((s) => [s.name, []]));
  const cpuMicros = new Map<string, number[]>(scenarios.map((s) => [s.name, []]));
  const pairs: [string, string, number][] = [
    ['basic', 'bare', 0.9],
    ['bearer', 'bare', 0.9],
    ['basic', 'caddy', 1.1],
  ];
  const paired = new Map<string, number[]>(pairs.map(([a, b]) => [`${a}/${b}`, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < scenarios.length; i += 1) {
      const scenario = scenarios[(i + round) % scenarios.length];
      if (scenario === undefined) continue;
      const before = cpuSeconds(scenario.pid);
      const run = await wrk(scenario.url, scenario.header);
      alone.get(scenario.name)?.push(run.rps);
      cpuMicros
        .get(scenario.name)
        ?.push(((cpuSeconds(scenario.pid) - before) / run.requests) * 1e6);
    }
    for (const [a, b] of pairs) {
      const x = byName.get(a);
      const y = byName.get(b);
      if (x === undefined || y === undefined) continue;
      const half = Math.max(1, Math.floor(connections / 2));
      const [rx, ry] = await Promise.all([wrk(x.url, x.header, half), wrk(y.url, y.header, half)]);
      paired.get(`${a}/${b}`)?.push(rx.rps / ry.rps);
    }
  }
  const gatewayRss = rssMiB(gateway.child.pid);

  console.log(
    `\n${rounds} rounds, ${connections} connections, ${seconds}s per run, wrk -t1, node ${process.version}`,
  );
  console.log("alone (median req/s, then each round) and the proxy's CPU µs per request:");
  for (const [name, values] of alone) {
    const cpu = median(cpuMicros.get(name) ?? []);
    console.log(
      `  ${name.padEnd(7)} ${median(values).toFixed(0).padStart(7)}   (${values.map((v) => v.toFixed(0)).join(' ')})   cpu ${cpu.toFixed(0)} µs/req`,
    );
  }
  const ratioOf = (table: Map<string, number[]>, a: string, b: string, invert = false): string => {
    const x = table.get(a);
    const y = table.get(b);
    if (x === undefined || y === undefined || y.length === 0) return 'n/a';
    const ratio = median(x) / median(y);
    return (invert ? 1 / ratio : ratio).toFixed(2);
  };
  console.log('ratios            alone  cost   paired (median; each round)     target');
  for (const [a, b, target] of pairs) {
    const values = paired.get(`${a}/${b}`) ?? [];
    const pairedText =
      values.length === 0
        ? 'n/a'
        : `${median(values).toFixed(2)} (${values.map((v) => v.toFixed(2)).join(' ')})`;
    console.log(
      `  ${`${a}/${b}`.padEnd(14)} ${ratioOf(alone, a, b).padStart(6)} ${ratioOf(cpuMicros, a, b, true).padStart(5)}   ${pairedText.padEnd(30)} >= ${target.toFixed(2)}`,
    );
  }
  console.log('(cost: the inverse ratio of CPU µs per request, i.e. requests per CPU-second)');
  console.log(`gateway RSS after the runs: ${gatewayRss.toFixed(0)} MiB`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function wrkWarm(url: string, header: string | undefined): void {
  const args = [
    '-t1',
    `-c${connections}`,
    '-d2s',
    ...(header === undefined ? [] : ['-H', header]),
    url,
  ];
  spawnSync('wrk', args, { timeout: 30_000 });
}

function stopAll(): void {
  for (const child of children) {
    if (child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

main()
  .catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  })
  .finally(stopAll);

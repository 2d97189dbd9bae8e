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

function wrk(url: string, header?: string): number {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
  if (header !== undefined) args.push('-H', header);
  const run = spawnSync('wrk', [...args, url], {
    encoding: 'utf8',
    timeout: (seconds + 30) * 1000,
  });
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(run.stdout);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(run.stdout);
  if (rps === null) throw new Error(`wrk failed: ${run.stderr || run.stdout}`);
  if (non2xx !== null) throw new Error(`wrk saw ${non2xx[1]} non-2xx responses from ${url}`);
  return Number(rps[1]);
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

  const scenarios: { name: string; url: string; header?: string }[] = [
    { name: 'bare', url: `http://127.0.0.1:${bare.match[1]}/accounts` },
    { name: 'basic', url: gatewayUrl, header: basicHeader },
    { name: 'bearer', url: gatewayUrl, header: `Authorization: Bearer ${token}` },
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
    await start(
      'caddy',
      ['run', '--config', caddyfile, '--adapter', 'caddyfile'],
      /serving initial configuration|server running/,
    );
    scenarios.push({
      name: 'caddy',
      url: `http://127.0.0.1:${port}/accounts`,
      header: basicHeader,
    });
  }

  // Warm-up: the first Basic request pays bcrypt once, then the pair is cached.
  for (const scenario of scenarios) wrkWarm(scenario.url, scenario.header);
  // This machine's speed drifts from minute to minute (shared cores): interleave short
  // rounds in a rotating order and compare medians, never one run against another.
  const samples = new Map<string, number[]>(scenarios.map((s) => [s.name, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < scenarios.length; i += 1) {
      const scenario = scenarios[(i + round) % scenarios.length];
      if (scenario !== undefined)
        samples.get(scenario.name)?.push(wrk(scenario.url, scenario.header));
    }
  }
  const gatewayRss = rssMiB(gateway.child.pid);
  const results: Record<string, number> = {};
  for (const [name, values] of samples) results[name] = median(values);

  const line = (name: string): string => {
    const values = samples.get(name);
    const value = results[name];
    return `${name.padEnd(8)} ${value === undefined ? 'n/a' : value.toFixed(0).padStart(8)} req/s   (${(values ?? []).map((v) => v.toFixed(0)).join(' ')})`;
  };
  console.log(
    `\nmedian of ${rounds} rounds, ${connections} connections, ${seconds}s per run, wrk -t1, node ${process.version}`,
  );
  for (const name of ['bare', 'basic', 'bearer', 'caddy']) console.log(line(name));
  const ratio = (a: string, b: string): string => {
    const x = results[a];
    const y = results[b];
    return x === undefined || y === undefined ? 'n/a' : (x / y).toFixed(2);
  };
  console.log(`basic/bare  ${ratio('basic', 'bare')}   (target >= 0.90)`);
  console.log(`bearer/bare ${ratio('bearer', 'bare')}   (target >= 0.90)`);
  console.log(`basic/caddy ${ratio('basic', 'caddy')}   (target >= 1.10)`);
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
  const args = ['-t1', '-c4', '-d1s', ...(header === undefined ? [] : ['-H', header]), url];
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

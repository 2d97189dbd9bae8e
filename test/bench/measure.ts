// One measurement: wrk runs (one, or two at once for the mixed section) against a proxy,
// while its process tree's CPU time (user + system, /proc/<pid>/stat) and RSS (VmRSS,
// sampled) are read. wrk reports through a Lua done() hook as one JSON line.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processTree, statFields, type ProcessGroup } from './processes.js';

/** wrk's done() report, and what it makes. */
export interface WrkResult {
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Responses with status >= 400 (wrk's "Non-2xx or 3xx"). */
  readonly non2xx: number;
  readonly socketErrors: { connect: number; read: number; write: number; timeout: number };
  /** Responses by status (pair scripts only: counting costs wrk time). */
  readonly statuses: Record<string, number>;
  /** Set when wrk gave no report (it failed to run); the measurement then counts as failed. */
  readonly failure?: string;
}

export interface WrkSpec {
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  /** A fixed header (`Authorization: Basic …`) for every request. */
  readonly header?: string;
  /** Generated Basic pairs: key = prefix + zero-padded index, cycling from `start`. */
  readonly pairs?: PairCycle;
  /** Wrong secrets for random keys from random X-Forwarded-For addresses (the flood). */
  readonly flood?: Flood;
  /** Pairs drawn by a Zipf law from a file of Authorization values (the population). */
  readonly zipf?: ZipfDraw;
}

/**
 * Each request: line k of `file` (one Authorization value per line, the hottest first) with
 * probability (1 / k^exponent) / H, H the sum over every line; LuaJIT's generator seeded
 * with `seed`, so rows given the same seeds draw the same pairs in the same order.
 */
export interface ZipfDraw {
  readonly file: string;
  readonly exponent: number;
  readonly seed: number;
}

/**
 * Each request: key `ak_flood_` + 6 digits (one of `keys`), the same wrong secret, and
 * `X-Forwarded-For: 10.77.<i / 256>.<i % 256>` (one of `addresses`), both drawn at random.
 */
export interface Flood {
  readonly keys: number;
  readonly addresses: number;
  readonly secret: string;
}

export const FLOOD_KEY_PREFIX = 'ak_flood_';

export interface PairCycle {
  /** prefix.length + digits must be a multiple of 3 (the Lua side encodes base64 per group). */
  readonly prefix: string;
  readonly digits: number;
  readonly count: number;
  readonly start: number;
  readonly secret: string;
}

export interface Measurement {
  readonly wrk: WrkResult[];
  /** CPU seconds (user + system) the measured process tree used during the run. */
  readonly cpuSeconds: number;
  /** Highest summed VmRSS of the tree seen during the run (sampled every 200 ms). */
  readonly rssPeakMiB: number;
  /** Processes in the tree (the proxy and its workers or children). */
  readonly processes: number;
}

const REPORT = `
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function done(summary, latency, requests)
  local statuses = {}
  for _, thread in ipairs(threads) do
    local counts = thread:get("counts")
    if counts then
      for status, n in pairs(counts) do statuses[status] = (statuses[status] or 0) + n end
    end
  end
  local parts = {}
  for status, n in pairs(statuses) do parts[#parts + 1] = string.format('"%s":%d', status, n) end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%.0f,"p99_us":%.0f,"max_us":%.0f,' ..
    '"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"statuses":{%s}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.status, e.connect, e.read, e.write, e.timeout, table.concat(parts, ",")))
end
`;

// base64 in wrk's Lua, for strings whose length is a multiple of 3 (no padding).
const BASE64_LUA = `
local ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function sextet(n) return ALPHABET:sub(n + 1, n + 1) end
local function base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + b * 256 + c
    out[#out + 1] = sextet(math.floor(n / 262144)) .. sextet(math.floor(n / 4096) % 64) ..
      sextet(math.floor(n / 64) % 64) .. sextet(n % 64)
  end
  return table.concat(out)
end
`;

// Arguments (after --): prefix, digits, count, start, base64 of ":" .. secret.
const PAIRS = `${BASE64_LUA}
function init(args)
  format = args[1] .. "%0" .. args[2] .. "d"
  count = tonumber(args[3])
  index = tonumber(args[4])
  tail = args[5]
  counts = {}
end
function request()
  local key = string.format(format, index % count)
  index = index + 1
  return wrk.format(nil, nil, { ["Authorization"] = "Basic " .. base64(key) .. tail })
end
function response(status)
  local name = tostring(status)
  counts[name] = (counts[name] or 0) + 1
end
`;

// Arguments (after --): key count, address count, base64 of ":" .. secret. The key is 15
// characters, so its base64 ends on a group boundary and the tail can be appended as is.
const FLOOD = `${BASE64_LUA}
function init(args)
  keys = tonumber(args[1])
  addresses = tonumber(args[2])
  tail = args[3]
  counts = {}
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
function request()
  local key = string.format("${FLOOD_KEY_PREFIX}%06d", math.random(0, keys - 1))
  local a = math.random(0, addresses - 1)
  return wrk.format(nil, nil, {
    ["Authorization"] = "Basic " .. base64(key) .. tail,
    ["X-Forwarded-For"] = string.format("10.77.%d.%d", math.floor(a / 256), a % 256),
  })
end
function response(status)
  local name = tostring(status)
  counts[name] = (counts[name] or 0) + 1
end
`;

// Arguments (after --): file, exponent, seed. The cumulative distribution is built once per
// thread; each request draws u in [0, 1) and finds the first line whose share reaches it by
// binary search (17 steps for 100,000 lines).
const ZIPF = `
function init(args)
  headers = {}
  for line in io.lines(args[1]) do headers[#headers + 1] = line end
  count = #headers
  local exponent = tonumber(args[2])
  cdf = {}
  local sum = 0
  for k = 1, count do
    sum = sum + 1 / k ^ exponent
    cdf[k] = sum
  end
  for k = 1, count do cdf[k] = cdf[k] / sum end
  math.randomseed(tonumber(args[3]))
  counts = {}
end
function request()
  local u = math.random()
  local low, high = 1, count
  while low < high do
    local middle = math.floor((low + high) / 2)
    if cdf[middle] < u then low = middle + 1 else high = middle end
  end
  return wrk.format(nil, nil, { ["Authorization"] = headers[low] })
end
function response(status)
  local name = tostring(status)
  counts[name] = (counts[name] or 0) + 1
end
`;

export interface Scripts {
  readonly plain: string;
  readonly pairs: string;
  readonly flood: string;
  readonly zipf: string;
}

export function writeScripts(dir: string): Scripts {
  const plain = join(dir, 'report.lua');
  const pairs = join(dir, 'pairs.lua');
  const flood = join(dir, 'flood.lua');
  const zipf = join(dir, 'zipf.lua');
  writeFileSync(plain, REPORT);
  writeFileSync(pairs, PAIRS + REPORT);
  writeFileSync(flood, FLOOD + REPORT);
  writeFileSync(zipf, ZIPF + REPORT);
  return { plain, pairs, flood, zipf };
}

/** The Basic credentials of pair `index` of a cycle, as the Lua script makes them. */
export function pairKey(cycle: Pick<PairCycle, 'prefix' | 'digits'>, index: number): string {
  return cycle.prefix + String(index).padStart(cycle.digits, '0');
}

function scriptOf(spec: WrkSpec, scripts: Scripts): string {
  if (spec.flood !== undefined) return scripts.flood;
  if (spec.zipf !== undefined) return scripts.zipf;
  return spec.pairs === undefined ? scripts.plain : scripts.pairs;
}

function wrkArgs(spec: WrkSpec, scripts: Scripts): string[] {
  const args = [
    '-t1',
    `-c${spec.connections}`,
    `-d${spec.seconds}s`,
    '--timeout',
    '10s',
    '-s',
    scriptOf(spec, scripts),
    ...(spec.header === undefined ? [] : ['-H', spec.header]),
    spec.url,
  ];
  const z = spec.zipf;
  if (z !== undefined) {
    args.push('--', z.file, String(z.exponent), String(z.seed));
    return args;
  }
  const f = spec.flood;
  if (f !== undefined) {
    const tail = Buffer.from(`:${f.secret}`).toString('base64');
    args.push('--', String(f.keys), String(f.addresses), tail);
    return args;
  }
  const p = spec.pairs;
  if (p !== undefined) {
    if ((p.prefix.length + p.digits) % 3 !== 0) throw new Error('pair key length must be 3n');
    const tail = Buffer.from(`:${p.secret}`).toString('base64');
    args.push('--', p.prefix, String(p.digits), String(p.count), String(p.start), tail);
  }
  return args;
}

/** Runs wrk once; a run that could not report is a failed result, never an exception. */
export async function runWrk(
  group: ProcessGroup,
  spec: WrkSpec,
  scripts: Scripts,
): Promise<WrkResult> {
  const wrk = group.start('wrk', 'wrk', wrkArgs(spec, scripts), { output: 'pipe' });
  let out = '';
  wrk.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  wrk.child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await wrk.exited;
  return parseWrk(out);
}

export function parseWrk(out: string): WrkResult {
  const line = /^BENCH_JSON (.*)$/m.exec(out)?.[1];
  if (line === undefined) return failed(out.trim().slice(0, 500) || 'wrk printed nothing');
  const r = JSON.parse(line) as {
    requests: number;
    duration_us: number;
    p50_us: number;
    p99_us: number;
    max_us: number;
    status: number;
    connect: number;
    read: number;
    write: number;
    timeout: number;
    statuses: Record<string, number>;
  };
  const seconds = r.duration_us / 1e6;
  return {
    requests: r.requests,
    seconds,
    rps: seconds > 0 ? r.requests / seconds : 0,
    p50Ms: r.p50_us / 1000,
    p99Ms: r.p99_us / 1000,
    maxMs: r.max_us / 1000,
    non2xx: r.status,
    socketErrors: { connect: r.connect, read: r.read, write: r.write, timeout: r.timeout },
    statuses: r.statuses,
  };
}

function failed(failure: string): WrkResult {
  return {
    requests: 0,
    seconds: 0,
    rps: 0,
    p50Ms: NaN,
    p99Ms: NaN,
    maxMs: NaN,
    non2xx: 0,
    socketErrors: { connect: 0, read: 0, write: 0, timeout: 0 },
    statuses: {},
    failure,
  };
}

/** Non-2xx responses plus socket errors (connect, read, write, timeout). */
export function errorCount(result: WrkResult): number {
  const s = result.socketErrors;
  return result.non2xx + s.connect + s.read + s.write + s.timeout;
}

/** Socket errors only (for a load that is meant to be answered 401). */
export function socketErrorCount(result: WrkResult): number {
  const s = result.socketErrors;
  return s.connect + s.read + s.write + s.timeout;
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100;

/** User + system clock ticks of one /proc/<pid>/stat line (every thread of the process). */
export function cpuTicks(stat: string): number {
  const fields = statFields(stat);
  // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name.
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU seconds (user + system) used so far by these processes (gone ones count 0). */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      ticks += cpuTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      // Exited meanwhile.
    }
  }
  return ticks / CLOCK_TICKS;
}

/** Summed resident set (VmRSS) of these processes, MiB. */
export function rssMiB(pids: readonly number[]): number {
  let kib = 0;
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      kib += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // Exited meanwhile.
    }
  }
  return kib / 1024;
}

/**
 * Runs the wrk specs at the same time against the tree of `pid` and measures that tree: its
 * CPU time over the run and its peak RSS.
 */
export async function measure(
  group: ProcessGroup,
  pid: number,
  specs: readonly WrkSpec[],
  scripts: Scripts,
): Promise<Measurement> {
  const pids = processTree(pid);
  let peak = rssMiB(pids);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pids))), 200);
  const before = cpuSeconds(pids);
  try {
    const wrk = await Promise.all(specs.map((spec) => runWrk(group, spec, scripts)));
    const after = cpuSeconds(pids);
    peak = Math.max(peak, rssMiB(pids));
    return { wrk, cpuSeconds: after - before, rssPeakMiB: peak, processes: pids.length };
  } finally {
    clearInterval(sampler);
  }
}

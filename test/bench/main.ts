// The bench: detects its tools, prints the plan and its estimated duration, starts what the
// chosen sections need, runs them, prints the table and writes the JSON. See run-bench.ts
// for the entry and docs/benchmark.md for what each figure means.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, constants, cpus, tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { accuracyPlan } from './accuracy.js';
import { FAILOVER_RUNS } from './failover.js';
import { populationPlan } from './population.js';
import { writeScripts } from './measure.js';
import {
  HELP,
  formatDuration,
  parseOptions,
  UsageError,
  type BenchOptions,
  type Section,
} from './options.js';
import { createProcessGroup, findCommand, versionOf, type ProcessGroup } from './processes.js';
import { formatNumber, sectionJson, sectionText } from './report.js';
import type { BenchContext, SectionResult } from './scenarios.js';
import { runSections, type Tools } from './sections.js';
import { CLI } from './targets.js';

/** Per measurement beyond its duration: starting wrk, reading /proc, the pause after it. */
const OVERHEAD_SEC = 0.6;

function detectTools(options: BenchOptions): Tools {
  const want = (s: Section): boolean => options.sections.includes(s);
  const needsRedis = (
    [
      'cached',
      'cold',
      'mixed',
      'pairs',
      'workers',
      'limits',
      'accuracy',
      'keys',
      'fleet',
      'revocation',
      'population',
    ] as const
  ).some(want);
  const missing: string[] = [];
  if (findCommand('wrk') === undefined) missing.push('wrk (Debian/Ubuntu: apt-get install wrk)');
  if (needsRedis && findCommand('redis-server') === undefined)
    missing.push('redis-server (Debian/Ubuntu: apt-get install redis-server)');
  if (needsRedis && findCommand('redis-cli') === undefined)
    missing.push('redis-cli (Debian/Ubuntu: apt-get install redis-tools)');
  if (missing.length > 0) throw new UsageError(`the bench needs: ${missing.join('; ')}`);
  const skipped: string[] = [];
  const caddy = findCommand('caddy');
  const nginx = findCommand('nginx');
  if ((want('cached') || want('population')) && caddy === undefined)
    skipped.push('Caddy rows: caddy not found (Debian/Ubuntu: apt-get install caddy)');
  if (want('cached') && nginx === undefined)
    skipped.push('nginx row: nginx not found (Debian/Ubuntu: apt-get install nginx)');
  const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' });
  const workers = `${help.stdout}${help.stderr}`.includes('--workers');
  const versions: Record<string, string> = {
    node: process.version,
    wrk: versionOf('wrk', ['--version']),
  };
  if (needsRedis) versions.redis = versionOf('redis-server', ['--version']);
  if (caddy !== undefined) versions.caddy = versionOf(caddy, ['version']);
  if (nginx !== undefined) versions.nginx = versionOf(nginx, ['-v']);
  return { caddy, nginx, workers, versions, skipped };
}

interface Plan {
  readonly measurements: number;
  readonly estimateSec: number;
  readonly lines: string[];
}

function makePlan(options: BenchOptions, tools: Tools): Plan {
  const rows: Record<Section, number> = {
    cached: 10 + (tools.caddy === undefined ? 0 : 2) + (tools.nginx === undefined ? 0 : 1),
    cold: 1,
    mixed: 2,
    pairs: 4,
    heap: 0,
    // In process, not wrk rounds: its time is in setupSec.
    trace: 0,
    workers: tools.workers ? 2 : 0,
    flood: 2,
    // Off (and a second off gateway, the control), exact and lease.
    limits: 4,
    // Not rows measured by runRounds: its own fixed-length runs, counted in setupSec.
    accuracy: 0,
    // Sequential requests, not wrk rounds: its time is in setupSec.
    keys: 0,
    // Not wrk rounds either: its time is in setupSec.
    failover: 0,
    revocation: 0,
    fleet: 6,
    // Its own rounds and warm-up (population.ts): counted below.
    population: 0,
  };
  const warm: Record<Section, number> = { ...rows, cold: 0, pairs: 2 };
  let measurements = 0;
  let warmups = 0;
  const lines: string[] = [];
  for (const section of options.sections) {
    measurements += rows[section] * options.rounds;
    warmups += warm[section];
    if (rows[section] > 0)
      lines.push(`  ${section}: ${rows[section]} configurations × ${options.rounds} rounds`);
  }
  const want = (s: Section): boolean => options.sections.includes(s);
  const population = populationPlan(options, tools.caddy !== undefined, tools.workers);
  const accuracy = accuracyPlan(options.rounds, options.warmup);
  if (want('accuracy')) lines.push(`  ${accuracy.line}`);
  if (want('population')) {
    measurements += population.rows * population.rounds;
    lines.push(`  population: ${population.rows} configurations × ${population.rounds} rounds`);
  }
  const setupSec =
    10 +
    (want('pairs') ? 5 + options.pairsLarge / 50_000 : 0) +
    (want('cold') ? 3 : 0) +
    (want('heap') ? 2 + options.heapPairs / 25_000 : 0) +
    (want('trace') ? 6 : 0) +
    (want('keys') ? 15 : 0) +
    // Per run: a topology started, warm-up and load, the failover (about 4 s), 3 s after it.
    (want('failover') ? FAILOVER_RUNS * (15 + options.warmup + options.duration + 7) : 0) +
    // A Cluster, two gateways of two workers, a failover, and rounds × 20 revocations.
    (want('revocation') ? 40 + options.rounds * 4 : 0) +
    (want('fleet') ? 20 : 0) +
    // The lease check in process (limit-check-cost.ts).
    (want('limits') ? 5 : 0) +
    (want('accuracy') ? accuracy.seconds : 0) +
    (want('population') ? population.otherSec : 0);
  const estimateSec =
    measurements * (options.duration + OVERHEAD_SEC) +
    warmups * (options.warmup + OVERHEAD_SEC) +
    setupSec;
  return { measurements, estimateSec, lines };
}

export async function main(argv: readonly string[]): Promise<number> {
  let options: BenchOptions | undefined;
  let tools: Tools;
  try {
    options = parseOptions(argv);
    if (options === undefined) {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    tools = detectTools(options);
  } catch (error) {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const opts = options;
  const plan = makePlan(opts, tools);
  let interrupted: NodeJS.Signals | undefined;
  // After a signal, the steps still unwinding print nothing more.
  const log = (text: string): void => {
    if (interrupted === undefined) process.stderr.write(`${text}\n`);
  };
  log(
    `bench: ${plan.measurements} measurements of ${opts.duration} s in ${opts.rounds} interleaved rounds (${opts.connections} connections; wrk -t1; 127.0.0.1 only)`,
  );
  for (const line of plan.lines) log(line);
  for (const line of tools.skipped) log(`  skipped: ${line}`);
  if (opts.sections.includes('workers') && !tools.workers)
    log('  skipped: workers section: `serve --workers` is not in this build yet');
  log(`estimated total: about ${formatDuration(plan.estimateSec)}`);

  const group: ProcessGroup = createProcessGroup();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted !== undefined) return;
    log(
      `\nbench: ${signal}: stopping ${group.running().length} processes (PIDs ${group.running().join(' ')}) and removing ${group.dir}`,
    );
    interrupted = signal;
    void group.close().finally(() => {
      process.stderr.write(`bench: stopped everything it started; ${group.dir} removed\n`);
      process.exit(128 + constants.signals[signal]);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Last resort (an exit nobody planned): kill what is left, synchronously.
  process.on('exit', () => group.closeNow());

  const began = Date.now();
  let done = 0;
  const elapsed = (): string => formatDuration((Date.now() - began) / 1000);
  const ctx: BenchContext = {
    group,
    options: opts,
    scripts: writeScripts(group.dir),
    onNote: (text) => log(`[${elapsed()}] ${text}`),
    onRun: (section, r, runResult, rounds) => {
      done += 1;
      const left = Math.max(0, plan.measurements - done) * (opts.duration + OVERHEAD_SEC);
      const w = runResult.wrk;
      const failure = w.failure === undefined ? '' : ` — wrk failed: ${w.failure}`;
      const c = runResult.companion;
      const beside =
        c === undefined
          ? ''
          : ` (beside: ${formatNumber(c.rps, 'int')} req/s, statuses ${JSON.stringify(c.statuses)})`;
      log(
        `[${done}/${plan.measurements} ${elapsed()} elapsed, ~${formatDuration(left)} left] ${section} round ${runResult.round}/${rounds}: ${r.label}: ${formatNumber(w.rps, 'int')} req/s, p99 ${formatNumber(w.p99Ms, 'ms')} ms, ${formatNumber(runResult.cpuMicrosPerRequest, 'int')} µs/req${runResult.errors > 0 ? `, ${runResult.errors} errors (run not counted)` : ''}${beside}${failure}`,
      );
    },
  };

  const startedAt = new Date().toISOString();
  let sections: SectionResult[];
  try {
    sections = await runSections(ctx, tools);
  } catch (error) {
    if (interrupted !== undefined) return new Promise(() => undefined); // the signal handler exits
    log(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    log(`stopping ${group.running().length} processes and removing ${group.dir}`);
    await group.close();
    return 1;
  }
  if (interrupted !== undefined) return new Promise(() => undefined);
  await group.close();

  const header = [
    `accounts-gateway bench, ${startedAt}: ${opts.rounds} interleaved rounds × ${opts.duration} s per configuration, ${opts.connections} connections (cold: ${opts.coldConnections}), wrk -t1, 127.0.0.1`,
    `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Object.entries(
      tools.versions,
    )
      .map(([k, v]) => `${k} ${v.replace(/^.*?(\d+\.\d+(\.\d+)?).*$/, '$1')}`)
      .join(', ')}`,
    "medians of the runs without errors; CPU µs/req = the proxy process tree's user+system time / requests; RSS = peak during a run",
  ];
  const text = [
    ...header,
    ...tools.skipped.map((s) => `skipped: ${s}`),
    '',
    sections.map(sectionText).join('\n\n'),
  ].join('\n');
  const json = {
    tool: 'accounts-gateway bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    options: opts,
    machine: {
      cores: availableParallelism(),
      cpu: cpus()[0]?.model,
      platform: process.platform,
      tmpdir: tmpdir(),
    },
    versions: tools.versions,
    skipped: tools.skipped,
    sections: sections.map(sectionJson),
  };
  mkdirSync(dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`${text}\n\nJSON: ${opts.json}\n`);
  log(`bench: done in ${elapsed()}; every process it started is stopped, ${group.dir} removed`);
  return 0;
}

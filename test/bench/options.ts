import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BCRYPT_COST } from '../../src/config/config-schema.js';

export const SECTIONS = [
  'cached',
  'cold',
  'mixed',
  'pairs',
  'heap',
  'trace',
  'workers',
  'flood',
  'limits',
  'accuracy',
  'keys',
  'failover',
  'revocation',
  'fleet',
  'population',
] as const;
export type Section = (typeof SECTIONS)[number];
export type Engine = 'http-proxy-3' | 'undici';

export interface BenchOptions {
  /** Seconds of load per measurement (wrk -d). */
  readonly duration: number;
  /** Times every configuration of a section is measured, interleaved. */
  readonly rounds: number;
  /** wrk connections of the cached-path measurements. */
  readonly connections: number;
  /** wrk connections of the cold (bcrypt-bound) measurements. */
  readonly coldConnections: number;
  /** Seconds of unmeasured load per configuration before its first round. */
  readonly warmup: number;
  /** bcrypt cost of the seeded pairs and of the gateways' credentials.bcryptCost. */
  readonly bcryptCost: number;
  /** Pairs seeded for the cold and mixed sections. */
  readonly coldPairs: number;
  /** The two store sizes of the pairs section. */
  readonly pairsSmall: number;
  readonly pairsLarge: number;
  /** Cached pairs of the heap measurement. */
  readonly heapPairs: number;
  /** Percent of the mixed section's connections that send wrong secrets. */
  readonly wrongShare: number;
  /** The gateway engine the sections beyond the cached path run against. */
  readonly engine: Engine;
  /** The population section's store sizes (pairs under Zipf load), ascending. */
  readonly populationSizes: readonly number[];
  /** Distinct (secret, bcrypt hash) entries the population's pairs share, pair i entry i mod D. */
  readonly populationHashes: number;
  readonly sections: readonly Section[];
  /** Where the JSON result is written. */
  readonly json: string;
}

export const HELP = `Usage: npm run bench -- [options]
       (or, after npm run build: node test/bench/run-bench.ts [options])

Measures the gateway against bare forwarding engines, Caddy and nginx on 127.0.0.1 with wrk,
in interleaved rounds (every configuration once per round; medians reported). Progress goes
to stderr, the table to stdout, the full result to a JSON file.

Options:
  --duration S          seconds of load per measurement                     (default 5)
  --rounds N            rounds; each configuration is measured once per round (default 5)
  --connections N       wrk connections, cached-path measurements           (default 64)
  --cold-connections N  wrk connections, cold (bcrypt-bound) measurements   (default 16)
  --warmup S            unmeasured load per configuration before round 1    (default 1)
  --bcrypt-cost N       cost of the seeded pairs and credentials.bcryptCost  (default 10)
  --cold-pairs N        distinct pairs for the cold and mixed sections      (default 20000)
  --pairs-small N       store size of the pairs section, small              (default 1000)
  --pairs-large N       store size of the pairs section, large              (default 1000000)
  --heap-pairs N        cached pairs of the heap measurement                (default 100000)
  --wrong-share P       percent of the mixed section's clients with wrong secrets (default 5)
  --engine E            gateway engine of the sections after "cached":
                        http-proxy-3 or undici                              (default http-proxy-3)
  --population-sizes L  pairs of the population section's groups, comma-separated
                                                                (default 1,1000,10000,100000)
  --population-hashes D distinct cost-N (secret, hash) entries the population's pairs
                        share, pair i taking entry i mod D; hashed at each run  (default 2000)
  --sections LIST       comma-separated, any of ${SECTIONS.join(',')}
                                                                            (default all)
                        (failover: --warmup, then --duration s of load before each of its
                        4 kills: Cluster and Sentinel, breaker on and off; population: at
                        most 3 rounds, each row warmed for --duration s up to 5 s)
  --json PATH           where the JSON result goes (default: a new file in ${tmpdir()})
  --help                this text

Needs wrk and redis-server (with redis-cli); Caddy and nginx rows are skipped, with an install
hint, when those are missing. The total duration is estimated and printed before it starts.
Every process it starts is stopped by its PID on exit, on SIGINT and SIGTERM.`;

function positive(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number < min)
    throw new UsageError(`--${name}: need a number >= ${min}`);
  return number;
}

export class UsageError extends Error {}

/** The options, or undefined when --help was asked (the caller prints HELP). */
export function parseOptions(argv: readonly string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      duration: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      'cold-connections': { type: 'string' },
      warmup: { type: 'string' },
      'bcrypt-cost': { type: 'string' },
      'cold-pairs': { type: 'string' },
      'pairs-small': { type: 'string' },
      'pairs-large': { type: 'string' },
      'heap-pairs': { type: 'string' },
      'wrong-share': { type: 'string' },
      engine: { type: 'string' },
      'population-sizes': { type: 'string' },
      'population-hashes': { type: 'string' },
      sections: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return undefined;
  const engine = values.engine ?? 'http-proxy-3';
  if (engine !== 'http-proxy-3' && engine !== 'undici')
    throw new UsageError('--engine: http-proxy-3 or undici');
  const sections = (values.sections ?? SECTIONS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const section of sections) {
    if (!(SECTIONS as readonly string[]).includes(section))
      throw new UsageError(`--sections: unknown "${section}" (known: ${SECTIONS.join(', ')})`);
  }
  const bcryptCost = positive('bcrypt-cost', values['bcrypt-cost'], 10, BCRYPT_COST.min);
  if (bcryptCost > BCRYPT_COST.max || !Number.isInteger(bcryptCost))
    throw new UsageError(
      `--bcrypt-cost: an integer from ${BCRYPT_COST.min} to ${BCRYPT_COST.max} (the config schema range)`,
    );
  const wrongShare = positive('wrong-share', values['wrong-share'], 5);
  if (wrongShare >= 100) throw new UsageError('--wrong-share: a percent below 100');
  const populationSizes = [
    ...new Set(
      (values['population-sizes'] ?? '1,1000,10000,100000')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
        .map((s) => {
          const n = Number(s);
          if (!Number.isInteger(n) || n < 1)
            throw new UsageError(`--population-sizes: "${s}" is not a whole number >= 1`);
          return n;
        }),
    ),
  ].sort((a, b) => a - b);
  if (populationSizes.length === 0) throw new UsageError('--population-sizes: at least one size');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return {
    duration: positive('duration', values.duration, 5),
    rounds: Math.floor(positive('rounds', values.rounds, 5)),
    connections: Math.floor(positive('connections', values.connections, 64)),
    coldConnections: Math.floor(positive('cold-connections', values['cold-connections'], 16)),
    warmup: positive('warmup', values.warmup, 1, 0),
    bcryptCost,
    coldPairs: Math.floor(positive('cold-pairs', values['cold-pairs'], 20_000)),
    pairsSmall: Math.floor(positive('pairs-small', values['pairs-small'], 1_000)),
    pairsLarge: Math.floor(positive('pairs-large', values['pairs-large'], 1_000_000)),
    heapPairs: Math.floor(positive('heap-pairs', values['heap-pairs'], 100_000)),
    wrongShare,
    engine,
    populationSizes,
    populationHashes: Math.floor(positive('population-hashes', values['population-hashes'], 2_000)),
    sections: SECTIONS.filter((s) => sections.includes(s)),
    json: values.json ?? join(tmpdir(), `accounts-gateway-bench-${stamp}.json`),
  };
}

/** "9 min 20 s" */
export function formatDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const minutes = Math.floor(total / 60);
  return minutes === 0 ? `${total} s` : `${minutes} min ${String(total % 60).padStart(2, '0')} s`;
}

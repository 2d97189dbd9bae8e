// The restart rows' load (population section): keep-alive clients, each sending a pair drawn
// by Zipf's law (zipf.ts, seeded) as soon as its previous request is answered. Each line on
// stdin is a new origin: from then on every request goes there (a new Pool), the old Pool is
// closed once its requests in flight are answered, and `switched <ms>` is written to stdout.
// On SIGTERM it stops and writes one line per answer to `out`: `origin sentMs answeredMs
// status` (origin: 0 the first, 1 the next...; times in ms since the epoch,
// performance.timeOrigin + performance.now(); status 0: no answer).
// Usage: node --import ../resolve-hook.ts zipf-load.ts SPEC_JSON
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { epochMs, sendRecorded } from './recorded-request.js';
import { seededRandom, zipfCdf, zipfIndex } from '../zipf.js';

interface Spec {
  readonly origin: string;
  readonly path: string;
  readonly out: string;
  readonly connections: number;
  /** One Authorization value per line, the hottest first. */
  readonly headersFile: string;
  readonly exponent: number;
  readonly seed: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const authorizations = readFileSync(spec.headersFile, 'utf8').split('\n').filter(Boolean);
const cdf = zipfCdf(authorizations.length, spec.exponent);
const random = seededRandom(spec.seed);
const newPool = (origin: string): Pool =>
  new Pool(origin, { connections: spec.connections, pipelining: 1 });
let pool = newPool(spec.origin);
let origin = 0;
const lines: string[] = [];
let running = true;

createInterface({ input: process.stdin }).on('line', (line) => {
  const next = line.trim();
  if (next === '') return;
  const old = pool;
  pool = newPool(next);
  origin += 1;
  process.stdout.write(`switched ${epochMs().toFixed(3)}\n`);
  // Waits for the requests still in flight there, then closes its connections.
  void old.close();
});

async function client(): Promise<void> {
  while (running) {
    const authorization = authorizations[zipfIndex(cdf, random())] ?? '';
    await sendRecorded(pool, spec.path, authorization, String(origin), lines);
  }
}

const clients = Array.from({ length: spec.connections }, client);
process.once('SIGTERM', () => {
  running = false;
  void Promise.allSettled(clients).then(async () => {
    writeFileSync(spec.out, lines.join('\n'));
    await pool.close();
    process.exit(0);
  });
});

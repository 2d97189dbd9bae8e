// The failover section's load, which records every answer: wrk reports a run as a whole,
// and the section needs the answers of the seconds before a kill set apart from those
// until the promotion. Keep-alive clients send a cached pair as fast as they are answered;
// a cold client, from SIGUSR2 on (the bench sends it once the master is dead), sends a pair
// never answered yet every `cold.intervalMs`: each until it is answered other than 503 (a
// pair the store could not read is not cached), then the next, the last one for good. On
// SIGTERM it stops and writes one line per answer to `out`:
// `kind sentMs answeredMs status` (kind c: cached, k: cold; times in ms since the epoch,
// performance.timeOrigin + performance.now(), so the bench can set them against its own).
// Usage: node --import ../resolve-hook.ts load.ts SPEC_JSON
import { writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { epochMs, sendRecorded } from './recorded-request.js';

interface Spec {
  readonly origin: string;
  readonly path: string;
  readonly out: string;
  readonly connections: number;
  /** The cached pair's Authorization value. */
  readonly authorization: string;
  readonly cold: {
    /** Authorization values of pairs never used before. */
    readonly authorizations: readonly string[];
    readonly intervalMs: number;
  };
}

const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const pool = new Pool(spec.origin, { connections: spec.connections + 1, pipelining: 1 });
const lines: string[] = [];
let running = true;
/** Resolved by SIGUSR2 (the cold client starts) or by SIGTERM (it never will). */
let startCold = (): void => undefined;
const coldStarted = new Promise<void>((resolve) => (startCold = resolve));
process.once('SIGUSR2', () => startCold());

/** Sends one request, records its answer and resolves with its status (0: none). */
function send(kind: 'c' | 'k', authorization: string): Promise<number> {
  return sendRecorded(pool, spec.path, authorization, kind, lines);
}

async function cached(): Promise<void> {
  while (running) await send('c', spec.authorization);
}

async function cold(): Promise<void> {
  const { authorizations, intervalMs } = spec.cold;
  await coldStarted;
  let index = 0;
  while (running) {
    const next = epochMs() + intervalMs;
    const authorization = authorizations[Math.min(index, authorizations.length - 1)];
    if (authorization === undefined) return;
    if ((await send('k', authorization)) !== 503) index += 1;
    const rest = next - epochMs();
    if (rest > 0 && running) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

const loops = [...Array.from({ length: spec.connections }, cached), cold()];
process.once('SIGTERM', () => {
  running = false;
  startCold();
  void Promise.allSettled(loops).then(async () => {
    writeFileSync(spec.out, lines.join('\n'));
    await pool.close();
    process.exit(0);
  });
});

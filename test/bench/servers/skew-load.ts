// The accuracy section's load (issue 28): keep-alive clients on two gateways, one credential,
// each sending as soon as its previous request is answered. `share` of the clients start on
// gateway A and the rest on B; `switchAfterMs` after the start the sides swap (A's clients
// go to B and B's to A), so the fleet's demand moves from one gateway's processes to the
// other's in the middle of the run, as a load balancer's shift would. It stops by itself
// `runMs` after the start (or on SIGTERM) and writes one line per answer to `out`:
// `side sentMs answeredMs status` (side 0: A, 1: B; times in ms since the epoch,
// performance.timeOrigin + performance.now(); status 0: no answer). stdout: `started <ms>`
// when the first requests go, `switched <ms>` at the swap.
// Usage: node --import ../resolve-hook.ts skew-load.ts SPEC_JSON
import { writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { epochMs, sendRecorded } from './recorded-request.js';

interface Spec {
  /** Gateway A's and B's origins. */
  readonly origins: readonly [string, string];
  readonly path: string;
  readonly out: string;
  readonly connections: number;
  /** Of the clients, this share (0..1) starts on A. */
  readonly share: number;
  readonly authorization: string;
  readonly switchAfterMs: number;
  readonly runMs: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
// Either side may carry every client's connection after the swap, so each pool allows all.
const pools = spec.origins.map(
  (origin) => new Pool(origin, { connections: spec.connections, pipelining: 1 }),
);
const onA = Math.round(spec.connections * spec.share);
const lines: string[] = [];
let running = true;
let swapped = false;

async function client(index: number): Promise<void> {
  const startsOnA = index < onA;
  while (running) {
    const side = startsOnA !== swapped ? 0 : 1;
    const pool = pools[side];
    if (pool === undefined) return;
    await sendRecorded(pool, spec.path, spec.authorization, String(side), lines);
  }
}

const started = epochMs();
process.stdout.write(`started ${started.toFixed(3)}\n`);
const clients = Array.from({ length: spec.connections }, (_, i) => client(i));
const swap = setTimeout(() => {
  swapped = true;
  process.stdout.write(`switched ${epochMs().toFixed(3)}\n`);
}, spec.switchAfterMs);
const end = setTimeout(stop, spec.runMs);

/** The clients finish the request each has in flight; then every answer is written. */
function stop(): void {
  if (!running) return;
  running = false;
  clearTimeout(swap);
  clearTimeout(end);
  void Promise.allSettled(clients).then(async () => {
    writeFileSync(spec.out, lines.join('\n'));
    await Promise.allSettled(pools.map((pool) => pool.close()));
    process.exit(0);
  });
}
process.once('SIGTERM', stop);

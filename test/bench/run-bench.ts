// `npm run bench` (which builds first): the gateway against bare forwarding engines, Caddy
// and nginx, on 127.0.0.1, in interleaved rounds. `--help` lists the options;
// docs/benchmark.md says what each figure means. The modules of test/bench/:
//   main.ts       options, tools, plan and estimate, signals, progress, table and JSON
//   sections.ts   each section: what it starts, its rows, its ratios and notes
//   scenarios.ts  interleaved rounds, cold pair cycles, the bcrypt limit
//   limits.ts     the limits section (off, its control, exact, lease) and what it and accuracy need
//   limit-check-cost.ts  a lease check's CPU, in process
//   accuracy.ts   the accuracy section: 2 gateways × 2 workers, a skewed load that swaps sides
//   accuracy-load.ts        its load client (servers/skew-load.ts), started and bounded
//   rate-limit-figures.ts  their arithmetic (windows, calls per request, targets), pure
//   targets.ts    upstream, bare engines, gateways, Caddy, nginx, Redis and its seeding
//   measure.ts    wrk (Lua report), CPU and RSS of a process tree from /proc
//   processes.ts  spawning, stopping by PID (also on SIGINT/SIGTERM), the temp dir
//   report.ts     medians, per-round ratios, the text table
//   servers/      the upstream, the two bare engines and the recording load clients
//                 (load.ts, zipf-load.ts, skew-load.ts)
//   heap-per-credential.ts  the in-process heap measurement (its own node --expose-gc)
//   trace-cost.ts           the in-process trace context cost (its own node)
//   fleet.ts      the fleet section: Redis CPU and script calls per master, 1 master and a
//                 Cluster, limits off, exact and lease
//   fleet-figures.ts  its arithmetic (INFO parsing, µs per request, capacity), pure
//   population.ts the population section: N pairs under a Zipf load, records on and off, Caddy
//   population-seed.ts      its pairs, their records and the loads' files
//   population-gateways.ts  its gateways (admin port, records on/off), their counters
//   population-restart.ts   its restart rows (servers/zipf-load.ts records every answer)
//   population-report.ts    its ratios, the factor over Caddy, the targets, pure
//   zipf.ts       Zipf's law: cumulative shares, a draw, a seeded generator
// Node runs these files by type stripping; resolve-hook.ts maps their `.js` imports to the
// `.ts` files of test/ and to the built dist/ for src/.
await import(new URL('./resolve-hook.ts', import.meta.url).href);
const { main } = await import('./main.js');
process.exit(await main(process.argv.slice(2)));

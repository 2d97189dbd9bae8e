// The fleet section's arithmetic, kept pure: what INFO commandstats says, what a Redis node
// did during one run (CPU and script calls), and what that makes of a master's capacity.
// fleet.ts does the reading; test/unit/bench/fleet-figures.test.ts checks these.
import { median } from '../support/median.js';

export interface CommandStat {
  readonly calls: number;
  /** Redis's own time in the command, µs (inside the event loop only). */
  readonly usec: number;
}

/** INFO commandstats by command name (`cmdstat_evalsha:calls=3,usec=41,...` → evalsha). */
export function parseCommandStats(info: string): Record<string, CommandStat> {
  const stats: Record<string, CommandStat> = {};
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):(.*)$/.exec(line);
    if (match === null) continue;
    const [, name = '', rest = ''] = match;
    const fields = new Map(
      rest.split(',').map((pair): [string, string] => {
        const [field = '', value = ''] = pair.split('=');
        return [field, value];
      }),
    );
    stats[name] = {
      calls: Number(fields.get('calls') ?? 0),
      usec: Number(fields.get('usec') ?? 0),
    };
  }
  return stats;
}

/**
 * Script runs: EVALSHA, and EVAL (the runner's fallback after a NOSCRIPT), with their
 * read-only forms. The commands a script calls are counted apart (cmdstat_hget...), not here.
 */
const SCRIPT_COMMANDS = ['evalsha', 'eval', 'evalsha_ro', 'eval_ro'] as const;

function scriptCalls(stats: Record<string, CommandStat>): number {
  return SCRIPT_COMMANDS.reduce((sum, name) => sum + (stats[name]?.calls ?? 0), 0);
}

/** What the fleet section reads of a node's INFO (commandstats, replication, keyspace). */
export interface NodeInfo {
  readonly role: 'master' | 'replica';
  /** Script runs so far. */
  readonly scriptCalls: number;
  /** Keys in db0. */
  readonly keys: number;
}

export function parseNodeInfo(info: string): NodeInfo {
  return {
    role: /^role:master\r?$/m.test(info) ? 'master' : 'replica',
    scriptCalls: scriptCalls(parseCommandStats(info)),
    keys: Number(/^db0:keys=(\d+)/m.exec(info)?.[1] ?? 0),
  };
}

/** One Redis node's counters at one moment. */
export interface NodeSample {
  /** `127.0.0.1:port` */
  readonly address: string;
  readonly role: 'master' | 'replica';
  /** User + system CPU of the redis-server process so far (/proc/<pid>/stat). */
  readonly cpuSeconds: number;
  /** Script runs so far (INFO commandstats). */
  readonly scriptCalls: number;
}

/** What one node did between two samples (its role as of the second). */
export type NodeDelta = NodeSample;

/** The nodes of `after` less their sample in `before` (matched by address). */
export function nodeDeltas(
  before: readonly NodeSample[],
  after: readonly NodeSample[],
): NodeDelta[] {
  return after.map((node) => {
    const was = before.find((b) => b.address === node.address);
    return {
      address: node.address,
      role: node.role,
      cpuSeconds: node.cpuSeconds - (was?.cpuSeconds ?? 0),
      scriptCalls: node.scriptCalls - (was?.scriptCalls ?? 0),
    };
  });
}

/** One run of one setup, in Redis's terms. */
export interface FleetFigures {
  /** Per master, in address order: its CPU µs per request the gateway answered. */
  readonly masterMicrosPerRequest: readonly number[];
  /** The masters' CPU µs per request, summed: the Redis work one request costs. */
  readonly mastersMicrosPerRequest: number;
  /** The replicas' CPU µs per request, summed (replication's share on their side). */
  readonly replicasMicrosPerRequest: number;
  /** Per master, in address order: its script runs during the run. */
  readonly scriptCallsPerMaster: readonly number[];
  /** Script runs on every master per request answered. */
  readonly scriptCallsPerRequest: number;
  /**
   * max/min of the masters' script runs: 1 for one master, Infinity when one ran none while
   * others ran some, NaN when none ran any.
   */
  readonly spread: number;
  /**
   * Requests/s one master carries at 100% of one core: 1e6 / the summed masters' µs per
   * request. On several masters, each carries this much of its share when the work spreads.
   */
  readonly oneMasterRps: number;
  /** Requests/s these masters carry together: 1e6 / the busiest master's µs per request. */
  readonly theseMastersRps: number;
  /** The busiest master's CPU over the run's seconds, % of one core: how far from saturated. */
  readonly busiestMasterPct: number;
}

export function fleetFigures(
  deltas: readonly NodeDelta[],
  requests: number,
  seconds: number,
): FleetFigures {
  const masters = deltas
    .filter((node) => node.role === 'master')
    .sort((a, b) => a.address.localeCompare(b.address));
  const replicas = deltas.filter((node) => node.role === 'replica');
  const perRequest = (cpuSeconds: number): number => (cpuSeconds / requests) * 1e6;
  const masterMicros = masters.map((node) => perRequest(node.cpuSeconds));
  const summed = masterMicros.reduce((sum, micros) => sum + micros, 0);
  const calls = masters.map((node) => node.scriptCalls);
  const busiest = Math.max(...masters.map((node) => node.cpuSeconds));
  const fewest = Math.min(...calls);
  const most = Math.max(...calls);
  return {
    masterMicrosPerRequest: masterMicros,
    mastersMicrosPerRequest: summed,
    replicasMicrosPerRequest: replicas.reduce((sum, node) => sum + perRequest(node.cpuSeconds), 0),
    scriptCallsPerMaster: calls,
    scriptCallsPerRequest: calls.reduce((sum, n) => sum + n, 0) / requests,
    spread: most === 0 ? NaN : most / fewest,
    oneMasterRps: 1e6 / summed,
    theseMastersRps: 1e6 / Math.max(...masterMicros),
    busiestMasterPct: (busiest / seconds) * 100,
  };
}

/** The median of each figure over runs (per master: each master's median). */
export function medianFigures(runs: readonly FleetFigures[]): FleetFigures {
  const of = (pick: (f: FleetFigures) => number): number => median(runs.map(pick));
  const each = (pick: (f: FleetFigures) => readonly number[]): number[] =>
    Array.from({ length: runs[0] === undefined ? 0 : pick(runs[0]).length }, (_, i) =>
      of((f) => pick(f)[i] ?? NaN),
    );
  return {
    masterMicrosPerRequest: each((f) => f.masterMicrosPerRequest),
    mastersMicrosPerRequest: of((f) => f.mastersMicrosPerRequest),
    replicasMicrosPerRequest: of((f) => f.replicasMicrosPerRequest),
    scriptCallsPerMaster: each((f) => f.scriptCallsPerMaster),
    scriptCallsPerRequest: of((f) => f.scriptCallsPerRequest),
    spread: of((f) => f.spread),
    oneMasterRps: of((f) => f.oneMasterRps),
    theseMastersRps: of((f) => f.theseMastersRps),
    busiestMasterPct: of((f) => f.busiestMasterPct),
  };
}

/**
 * Cores needed for `rps` requests/s when each costs `micros` µs of CPU and a core is to run
 * at `utilisation` (0..1]: Redis masters (one core each) or gateway cores, as docs/benchmark.md's
 * capacity model computes them.
 */
export function coresFor(rps: number, micros: number, utilisation: number): number {
  return Math.ceil((rps * micros) / (1e6 * utilisation));
}

/**
 * What one script run costs the masters: the µs per request a row with scripts spent beyond
 * a row without (the nodes' idle work, the cached check), per script run of a request. NaN
 * when either row is missing or the row ran no script.
 */
export function scriptMicros(
  withScripts: Pick<FleetFigures, 'mastersMicrosPerRequest' | 'scriptCallsPerRequest'> | undefined,
  without: Pick<FleetFigures, 'mastersMicrosPerRequest'> | undefined,
): number {
  if (withScripts === undefined || without === undefined) return NaN;
  const calls = withScripts.scriptCallsPerRequest;
  return calls > 0
    ? (withScripts.mastersMicrosPerRequest - without.mastersMicrosPerRequest) / calls
    : NaN;
}

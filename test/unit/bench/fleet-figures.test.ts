import { describe, expect, it } from 'vitest';
import {
  coresFor,
  fleetFigures,
  medianFigures,
  nodeDeltas,
  parseCommandStats,
  parseNodeInfo,
  type NodeSample,
} from '../../bench/fleet-figures.js';
import { cpuTicks } from '../../bench/measure.js';

// Lines as redis-server 7.0 prints them for INFO commandstats replication keyspace.
const INFO = [
  '# Commandstats',
  'cmdstat_evalsha:calls=120,usec=2400,usec_per_call=20.00,rejected_calls=0,failed_calls=0',
  'cmdstat_eval:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0',
  'cmdstat_hget:calls=240,usec=240,usec_per_call=1.00,rejected_calls=0,failed_calls=0',
  'cmdstat_info:calls=7,usec=700,usec_per_call=100.00,rejected_calls=0,failed_calls=0',
  '',
  '# Replication',
  'role:master',
  'connected_slaves:1',
  '',
  '# Keyspace',
  'db0:keys=418,expires=12,avg_ttl=0',
  '',
].join('\r\n');

const node = (address: string, role: NodeSample['role'], cpuSeconds: number, calls: number) => ({
  address,
  role,
  cpuSeconds,
  scriptCalls: calls,
});

describe('parseCommandStats', () => {
  it('reads the calls and µs of every command INFO commandstats lists', () => {
    expect(parseCommandStats(INFO)).toEqual({
      evalsha: { calls: 120, usec: 2400 },
      eval: { calls: 3, usec: 90 },
      hget: { calls: 240, usec: 240 },
      info: { calls: 7, usec: 700 },
    });
  });
});

describe('parseNodeInfo', () => {
  it("counts EVALSHA and EVAL as script runs, not the commands a script calls, and reads the node's role and keys", () => {
    expect(parseNodeInfo(INFO)).toEqual({ role: 'master', scriptCalls: 123, keys: 418 });
  });

  it('reads a replica (role:slave) with an empty keyspace and no script run', () => {
    expect(parseNodeInfo('# Replication\r\nrole:slave\r\nmaster_port:7001\r\n')).toEqual({
      role: 'replica',
      scriptCalls: 0,
      keys: 0,
    });
  });
});

describe('cpuTicks', () => {
  it('sums utime and stime of a /proc/<pid>/stat line whose command name holds spaces and parens', () => {
    const stat =
      '4242 (redis-server (x) 1) S 1 4242 4242 0 -1 4194560 900 0 0 0 173 58 0 0 20 0 5 0 100 0 0';
    expect(cpuTicks(stat)).toBe(231);
  });
});

describe('nodeDeltas', () => {
  it('subtracts each node’s earlier sample, matched by address, and keeps its latest role', () => {
    const before = [node('a', 'master', 1.5, 100), node('b', 'master', 2, 10)];
    const after = [node('b', 'replica', 2.25, 10), node('a', 'master', 2, 600)];
    expect(nodeDeltas(before, after)).toEqual([
      node('b', 'replica', 0.25, 0),
      node('a', 'master', 0.5, 500),
    ]);
  });
});

describe('fleetFigures', () => {
  it('derives one master’s µs per request and the requests/s it carries at one full core', () => {
    // The measurement: 1.61 s of redis-server CPU for 63,953 requests.
    const f = fleetFigures([node('127.0.0.1:6379', 'master', 1.61, 63_953)], 63_953, 10);
    expect(f.mastersMicrosPerRequest).toBeCloseTo(25.17, 2);
    expect(f.oneMasterRps).toBeCloseTo(39_722, 0);
    expect(f.theseMastersRps).toBeCloseTo(39_722, 0);
    expect(f.spread).toBe(1);
    expect(f.scriptCallsPerRequest).toBe(1);
    expect(f.busiestMasterPct).toBeCloseTo(16.1, 5);
  });

  it('sums the masters apart from the replicas, lets the busiest master bound the set, and gives the spread of script calls', () => {
    const f = fleetFigures(
      [
        node('n3', 'master', 0.3, 1200),
        node('n1', 'master', 0.2, 1000),
        node('n2', 'master', 0.1, 800),
        node('r1', 'replica', 0.05, 0),
        node('r2', 'replica', 0.05, 0),
      ],
      10_000,
      5,
    );
    expect(f.masterMicrosPerRequest.map((m) => Math.round(m))).toEqual([20, 10, 30]);
    expect(f.scriptCallsPerMaster).toEqual([1000, 800, 1200]);
    expect(f.mastersMicrosPerRequest).toBeCloseTo(60, 9);
    expect(f.replicasMicrosPerRequest).toBeCloseTo(10, 9);
    expect(f.oneMasterRps).toBeCloseTo(1e6 / 60, 6);
    expect(f.theseMastersRps).toBeCloseTo(1e6 / 30, 6);
    expect(f.spread).toBe(1.5);
    expect(f.scriptCallsPerRequest).toBe(0.3);
    expect(f.busiestMasterPct).toBeCloseTo(6, 9);
  });

  it('has no spread when no master ran a script, and an unbounded one when only some did', () => {
    const none = fleetFigures([node('a', 'master', 0, 0), node('b', 'master', 0, 0)], 100, 1);
    expect(none.spread).toBeNaN();
    const some = fleetFigures([node('a', 'master', 0, 0), node('b', 'master', 0, 5)], 100, 1);
    expect(some.spread).toBe(Infinity);
  });
});

describe('medianFigures', () => {
  it('takes the median of every figure over runs, per master for the per-master ones', () => {
    const runs = [1, 3, 2].map((k) =>
      fleetFigures([node('a', 'master', 0.1 * k, 10 * k), node('b', 'master', 0.2, 20)], 1000, 1),
    );
    const m = medianFigures(runs);
    expect(m.masterMicrosPerRequest.map((v) => Math.round(v))).toEqual([200, 200]);
    expect(m.scriptCallsPerMaster).toEqual([20, 20]);
    expect(m.mastersMicrosPerRequest).toBeCloseTo(400, 9);
  });
});

describe('coresFor', () => {
  it('rounds up the cores that R requests/s need at a target utilisation', () => {
    expect(coresFor(100_000, 25, 0.5)).toBe(5);
    expect(coresFor(100_000, 25, 1)).toBe(3);
    expect(coresFor(40_000, 25, 1)).toBe(1);
  });
});

import { Cluster } from 'ioredis';
import type { ScriptRunner } from './run-script.js';

/** Keys SCAN looks at per call: a batch Redis walks in well under a millisecond. */
const SCAN_COUNT = 1000;

/**
 * The key names matching `pattern` (SCAN MATCH), a batch per SCAN call that found any: SCAN on
 * each master, one after the other (a Cluster's keys of one slot are on one master, but which
 * one is not asked: every master is scanned). Each call walks SCAN_COUNT keys of the whole
 * keyspace, matching or not; a name may come twice (SCAN's own guarantee).
 */
export async function* scanBatches(
  runner: ScriptRunner,
  pattern: string,
): AsyncGenerator<string[], void, undefined> {
  const nodes = await runner.unkeyed((c) =>
    Promise.resolve(c instanceof Cluster ? c.nodes('master') : [c]),
  );
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await runner.unkeyed(() =>
        node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT),
      );
      if (batch.length > 0) yield batch;
      cursor = next;
    } while (cursor !== '0');
  }
}

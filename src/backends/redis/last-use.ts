import type { CredentialStore } from '../../credentials/credential-store.js';
import { USES_PER_WRITE } from '../../credentials/last-use-recorder.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { RECORD_LAST_USE } from './scripts.js';
import type { SingleSlot } from './single-slot.js';

/** Script runs of one last-use batch in flight at once (on a Cluster, each slot's pairs are one run). */
const LAST_USE_RUNS_AT_ONCE = 64;

/** A pair's id and when it was used. */
type Use = readonly [string, string];

export interface LastUseDeps {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly single: SingleSlot | undefined;
  /** The tag a pair's hash is under (pair-lookup.ts); undefined: none. */
  readonly tagOf: (id: string) => Promise<string | undefined>;
  /** A Cluster: a script runs on the keys of one slot only. */
  readonly perSlot: boolean;
}

/** When pairs were last used, recorded in their hashes: batched, never one run per pair. */
export function redisLastUse(deps: LastUseDeps): CredentialStore['recordLastUse'] {
  const { runner, layout, single, tagOf, perSlot } = deps;

  /**
   * Records last uses at `hashes`, USES_PER_WRITE per script run (the recorder's slice: each
   * run stays a short script, whatever the batch); resolves with the entries whose hash does
   * not exist.
   */
  const recordAt = async (entries: readonly Use[], hashOf: (id: string) => string) => {
    const absent: Use[] = [];
    for (let i = 0; i < entries.length; i += USES_PER_WRITE) {
      const batch = entries.slice(i, i + USES_PER_WRITE);
      const missing = await runner.run(
        RECORD_LAST_USE,
        { hashes: batch.map(([key]) => hashOf(key)) },
        { times: batch.map(([, at]) => at) },
      );
      for (const position of missing) {
        const entry = batch[position - 1];
        if (entry !== undefined) absent.push(entry);
      }
    }
    return absent;
  };

  return async (uses) => {
    const entries = [...uses];
    // Each pair's hash found as getKey finds it. A Cluster runs a script only on keys of one
    // slot: one run per tag. One Redis (standalone, Sentinel) takes any keys in a run: a
    // batch of many subjects' pairs is one run per USES_PER_WRITE, not one per subject.
    const tags = await Promise.all(entries.map(([key]) => tagOf(key)));
    const { groups, tagOfKey, elsewhere } = grouped(entries, tags, perSlot);
    const hashOf = (key: string) => layout.keyAt(tagOfKey.get(key) ?? '', key);
    const runs = [...groups.values()];
    for (let i = 0; i < runs.length; i += LAST_USE_RUNS_AT_ONCE) {
      const absent = await Promise.all(
        runs.slice(i, i + LAST_USE_RUNS_AT_ONCE).map((group) => recordAt(group, hashOf)),
      );
      elsewhere.push(...absent.flat());
    }
    // Pairs not moved out of the single slot yet are all in its one slot: one run per batch.
    if (single !== undefined && elsewhere.length > 0) await recordAt(elsewhere, single.layout.key);
  };
}

/**
 * The uses by script run: by tag on a Cluster, all in one group on one Redis; those of ids
 * with no tag here go `elsewhere`.
 */
function grouped(entries: readonly Use[], tags: readonly (string | undefined)[], perSlot: boolean) {
  const tagOfKey = new Map<string, string>();
  const groups = new Map<string, Use[]>();
  const elsewhere: Use[] = [];
  entries.forEach((entry, i) => {
    const tag = tags[i];
    if (tag === undefined) {
      elsewhere.push(entry);
      return;
    }
    tagOfKey.set(entry[0], tag);
    const group = perSlot ? tag : '';
    const members = groups.get(group);
    if (members === undefined) groups.set(group, [entry]);
    else members.push(entry);
  });
  return { groups, tagOfKey, elsewhere };
}

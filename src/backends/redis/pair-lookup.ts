import {
  isPastRetention,
  type KeyRecord,
  type RetentionOptions,
} from '../../credentials/credential-store.js';
import { parseKeyId } from '../../identity/key-id.js';
import { toKeyRecord } from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import { storedTag } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import type { SingleSlot } from './single-slot.js';

/** A pair as found: its record, and its hash's name, here or in the single slot. */
export interface FoundPair {
  readonly record: KeyRecord;
  readonly hash: string;
  readonly inSingleSlot: boolean;
}

/** Finding a pair from its id: here by its tag, else in the single slot. */
export interface PairLookup {
  /** The tag a pair's hash is under: the id's own, or its index entry's; undefined: neither. */
  readonly tagOf: (id: string) => Promise<string | undefined>;
  /** The pair of `id`, unless it is past its retention; undefined: none. */
  readonly locate: (id: string) => Promise<FoundPair | undefined>;
}

export interface PairLookupDeps {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly single: SingleSlot | undefined;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  readonly retention: RetentionOptions;
}

export function createPairLookup(deps: PairLookupDeps): PairLookup {
  const { runner, layout, single, now, retention } = deps;

  const tagOf = async (id: string): Promise<string | undefined> =>
    parseKeyId(id).kind === 'malformed' ? undefined : storedTag(runner, layout, id);

  const readPair = async (id: string, hash: string): Promise<KeyRecord | undefined> =>
    toKeyRecord(id, await runner.call(hash, (c, k) => c.hgetall(k)));

  const here = async (id: string): Promise<FoundPair | undefined> => {
    const tag = await tagOf(id);
    if (tag === undefined) return undefined;
    const hash = layout.keyAt(tag, id);
    const record = await readPair(id, hash);
    // A hash under another tag than its subject's is no pair of this id: its subject's
    // scripts (the cap, revocations, the listing) would never see it.
    return record !== undefined && layout.tagOf(record.subject) === tag
      ? { record, hash, inSingleSlot: false }
      : undefined;
  };

  const inSingleSlot = async (id: string): Promise<FoundPair | undefined> => {
    if (single === undefined || parseKeyId(id).kind === 'malformed') return undefined;
    const hash = single.layout.key(id);
    const record = await readPair(id, hash);
    return record === undefined ? undefined : { record, hash, inSingleSlot: true };
  };

  return {
    tagOf,
    locate: async (id) => {
      const found = (await here(id)) ?? (await inSingleSlot(id));
      // Past its retention a pair is gone, whether or not a script has deleted its hash yet.
      return found === undefined || isPastRetention(found.record, now(), retention.retainEndedSec)
        ? undefined
        : found;
    },
  };
}

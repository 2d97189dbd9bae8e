import type { RetentionOptions } from '../../credentials/credential-store.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { parseKeyId } from '../../identity/key-id.js';
import type { RedisLayout, SingleSlotLayout } from './layout.js';
import type { Named, Script, ScriptRunner, ScriptValue } from './run-script.js';
import type { PairReply } from './script-replies.js';

/**
 * Runs of a pair script per operation at most: a safety net, not a budget. The first run asks
 * for the hashes it needs (when it needs any), the second has them; a listing that meets
 * entries whose hash is gone asks once more per 1,000 of them (list-pairs.lua), and a run
 * asks again when the index changed in between.
 */
const MAX_PAIR_RUNS = 50;

/**
 * Where one subject's pairs are: its three indexes, the older writers' SET, and the name of
 * each pair's hash. All in one slot: a pair script changes them atomically.
 */
export interface PairPlace {
  readonly pairs: string;
  readonly ends: string;
  readonly active: string;
  readonly legacy: string;
  readonly hash: (id: string) => string;
}

/**
 * The tag a pair's hash is under in the layout of layout.ts: the id's own, else its
 * `key-tag` entry's (an id without a tag); undefined when it has neither.
 */
export async function storedTag(
  runner: ScriptRunner,
  layout: RedisLayout,
  id: string,
): Promise<string | undefined> {
  const parsed = parseKeyId(id);
  if (parsed.kind === 'tagged') return parsed.tag;
  return (await runner.call(layout.keyTag(id), (c, k) => c.get(k))) ?? undefined;
}

/** The subject's pairs in the layout of layout.ts, under the subject's tag. */
export function pairsHere(layout: RedisLayout, subject: string): PairPlace {
  return {
    pairs: layout.subjectPairs(subject),
    ends: layout.subjectEnds(subject),
    active: layout.subjectActive(subject),
    legacy: layout.subjectLegacyKeys(subject),
    hash: (id) => layout.key(id, subject),
  };
}

/** The subject's pairs not moved out of the single-slot layout (its prefix's one slot). */
export function pairsInSingleSlot(single: SingleSlotLayout, subject: string): PairPlace {
  return {
    pairs: single.subjectPairs(subject),
    ends: single.subjectEnds(subject),
    active: single.subjectActive(subject),
    legacy: single.subjectLegacyKeys(subject),
    hash: single.key,
  };
}

/** The KEYS and ARGV every pair script has (scripts.ts), which a run fills in. */
type PairKeyName = 'pairs' | 'ends' | 'active' | 'legacy' | 'hashes';
type PairArgName = 'nowMs' | 'retainMs' | 'subject' | 'ids';

/**
 * Runs a pair script of `subject` at `place` (scripts/pair-index.lua): again with the hashes
 * it asks for, until it is done; resolves with what follows its 'done', decoded.
 */
export type PairRun = <Keys extends readonly string[], Args extends readonly string[], Done>(
  script: Script<Keys, Args, PairReply<Done>>,
  subject: string,
  place: PairPlace,
  keys: Omit<Named<Keys, string>, PairKeyName>,
  args: Omit<Named<Args, ScriptValue>, PairArgName>,
) => Promise<Done>;

export function createPairRun(deps: {
  readonly runner: ScriptRunner;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  readonly retention: RetentionOptions;
}): PairRun {
  const { runner, now, retention } = deps;
  return async (script, subject, place, keys, args) => {
    const nowMs = now();
    let ids: string[] = [];
    for (let run = 0; run < MAX_PAIR_RUNS; run += 1) {
      // Each script's names are its own plus the common ones: what TypeScript cannot follow
      // through the spread of a generic, hence the casts (of what is sent, not of the reply).
      const reply = await runner.run(
        script,
        {
          pairs: place.pairs,
          ends: place.ends,
          active: place.active,
          legacy: place.legacy,
          hashes: ids.map(place.hash),
          ...keys,
        } as unknown as Named<typeof script.keys, string>,
        {
          nowMs,
          retainMs: retention.retainEndedSec * 1000,
          subject,
          ids,
          ...args,
        } as unknown as Named<typeof script.args, ScriptValue>,
      );
      if (reply.kind === 'done') return reply.value;
      ids = [...reply.ids];
    }
    throw new GatewayError('credential_store_unavailable', {
      cause: new Error(
        `the pairs of a subject changed under ${MAX_PAIR_RUNS} runs of ${script.name}`,
      ),
      retryAfterSec: 1,
    });
  };
}

import type { RedisLayout, SingleSlotLayout } from './layout.js';
import type { PairRun } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import { slotCopies } from './single-slot-copies.js';
import { createPairMover, indexesOf, MOVE_ATTEMPTS } from './single-slot-pairs.js';

/**
 * What moving one pair out of the single-slot layout did:
 * - `moved`: it is in the layout of layout.ts now, and gone from the single slot;
 * - `merged`, `same`: it was here already (another gateway moved it, or a writer wrote it
 *   here); what the single slot said that must not be lost (a revocation, a later last use)
 *   was merged in (`merged`) or was here already (`same`), and it is gone from the single slot;
 * - `gone`: nothing there (an index entry whose hash had left; the entry is dropped);
 * - left where it is, to be served from there, and reported by `migrate`:
 *   `fragment` (no subject or no secret hash, and no pair here to merge it into),
 *   `tag-mismatch` (a self-describing id whose tag is not its subject's: here it could not be
 *   found from the id), `id-taken` (an id without a tag already names another subject's pair
 *   here), `busy` (it changed under every attempt).
 */
export type PairMove =
  'moved' | 'merged' | 'same' | 'gone' | 'fragment' | 'tag-mismatch' | 'id-taken' | 'busy';

/** Outcomes after which the pair is no longer in the single slot. */
export const MOVED_AWAY: ReadonlySet<PairMove> = new Set(['moved', 'merged', 'same', 'gone']);

/**
 * What moving a user or a subject's settings did: `moved`; `kept` (one was here already: it is
 * newer, the single slot's is dropped); `gone` (nothing there); `busy` (it changed under every
 * attempt).
 */
export type HashMove = 'moved' | 'kept' | 'gone' | 'busy';

export interface SingleSlot {
  readonly layout: SingleSlotLayout;
  /** Whether the subject still has an index or settings in the single slot (one EXISTS). */
  holdsSubject(subject: string): Promise<boolean>;
  /**
   * Moves the pair `id`, and takes it out of the single slot's indexes of its subject and of
   * `indexedBy` (the subject whose index named it, when another).
   */
  movePair(id: string, indexedBy?: string): Promise<PairMove>;
  /** Moves every pair the subject's single-slot indexes name, then its settings. */
  moveSubject(
    subject: string,
  ): Promise<{ pairs: { id: string; outcome: PairMove }[]; settings: HashMove }>;
  moveUser(username: string): Promise<HashMove>;
  /** What movePair would do, reading only. */
  inspectPair(id: string): Promise<PairMove>;
}

export interface SingleSlotDeps {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly single: SingleSlotLayout;
  readonly runPairs: PairRun;
}

/**
 * Moves pairs, users and subjects' settings out of the single-slot layout, one at a time and
 * safely while gateways serve: each move copies into the layout of layout.ts (one script in
 * the destination's slot), then deletes the single slot's copy only while it is exactly what
 * was copied (one script in the single slot). A writer that changes it in between makes the
 * move start again, so nothing written there is lost; two gateways moving the same pair at
 * once both end with one copy. The two slots differ, so no step spans both. A pair's move is
 * single-slot-pairs.ts; a user's or a subject's settings' is moveHash below.
 */
export function createSingleSlot(deps: SingleSlotDeps): SingleSlot {
  const { runner, layout, single } = deps;
  const copies = slotCopies(runner);
  const { movePair, inspectPair } = createPairMover({ ...deps, copies });
  const moveHash = async (from: string, to: string): Promise<HashMove> => {
    for (let attempt = 0; attempt < MOVE_ATTEMPTS; attempt += 1) {
      const copy = await copies.read(from);
      if (Object.keys(copy.fields).length === 0) return 'gone';
      const written = await copies.copyIfAbsent(to, copy);
      if (await copies.dropIfSame(from, copy.fields, '', [])) return written ? 'moved' : 'kept';
    }
    return 'busy';
  };

  return {
    layout: single,
    async holdsSubject(subject) {
      const keys = [...indexesOf(single, subject), single.subject(subject)];
      return (await runner.call(single.subject(subject), (c) => c.exists(...keys))) > 0;
    },
    movePair,
    async moveSubject(subject) {
      // Every name of the single-slot layout is in its one slot: any of them finds its master.
      const ids = await runner.call(single.subjectPairs(subject), async (c) => {
        const [pairs, ends, active, legacy] = await Promise.all([
          c.zrange(single.subjectPairs(subject), '0', '-1'),
          c.zrange(single.subjectEnds(subject), '0', '-1'),
          c.smembers(single.subjectActive(subject)),
          c.smembers(single.subjectLegacyKeys(subject)),
        ]);
        return [...new Set([...pairs, ...ends, ...active, ...legacy])];
      });
      const pairs: { id: string; outcome: PairMove }[] = [];
      for (const id of ids) pairs.push({ id, outcome: await movePair(id, subject) });
      return { pairs, settings: await moveHash(single.subject(subject), layout.subject(subject)) };
    },
    moveUser: (username) => moveHash(single.user(username), layout.user(username)),
    inspectPair,
  };
}

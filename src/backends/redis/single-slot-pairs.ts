import { parseKeyId } from '../../identity/key-id.js';
import type { RedisLayout, SingleSlotLayout } from './layout.js';
import { pairsHere, storedTag, type PairRun } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import { ADOPT_PAIR } from './scripts.js';
import { flat, type SlotCopies } from './single-slot-copies.js';
import type { PairMove } from './single-slot.js';

/** Attempts at one move: each fails only when a writer changed the single slot's copy meanwhile. */
export const MOVE_ATTEMPTS = 5;

export interface PairMoverDeps {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly single: SingleSlotLayout;
  readonly runPairs: PairRun;
  readonly copies: SlotCopies;
}

/** Moving one pair out of the single slot (single-slot.ts), and telling what that would do. */
export interface PairMover {
  readonly movePair: (id: string, indexedBy?: string) => Promise<PairMove>;
  readonly inspectPair: (id: string) => Promise<PairMove>;
}

/** The single slot's indexes of a subject's pairs. */
export const indexesOf = (single: SingleSlotLayout, subject: string): string[] => [
  single.subjectPairs(subject),
  single.subjectEnds(subject),
  single.subjectActive(subject),
  single.subjectLegacyKeys(subject),
];

export function createPairMover(deps: PairMoverDeps): PairMover {
  const { single, copies } = deps;
  const destination = destinationOf(deps);
  const moveOnce = movePairOnce(deps, destination);
  return {
    movePair: async (id, indexedBy) => {
      for (let attempt = 0; attempt < MOVE_ATTEMPTS; attempt += 1) {
        const outcome = await moveOnce(id, indexedBy);
        if (outcome !== undefined) return outcome;
      }
      return 'busy';
    },
    inspectPair: async (id) => {
      const { fields } = await copies.read(single.key(id));
      if (Object.keys(fields).length === 0) return 'gone';
      const to = await destination(id, fields);
      return typeof to === 'string' ? to : 'moved';
    },
  };
}

type Destination = (
  id: string,
  fields: Record<string, string>,
) => Promise<{ subject: string; tag: string } | PairMove>;

/**
 * Whose pair the single slot's `fields` are, and whether it can move: a whole pair to its
 * subject's tag; a fragment (a writer's HSET of a revocation alone) into the pair here.
 */
function destinationOf(deps: PairMoverDeps): Destination {
  const { runner, layout } = deps;
  /** Where the pair of an id is here, by its tag; undefined when it has none yet. */
  const tagHere = (id: string): Promise<string | undefined> => storedTag(runner, layout, id);
  return async (id, fields) => {
    const { subject } = fields;
    if (subject === undefined || fields.secret_hash === undefined) {
      const tag = await tagHere(id);
      const owner =
        tag === undefined
          ? undefined
          : await runner.call(layout.keyAt(tag, id), (c, k) => c.hget(k, 'subject'));
      return owner === undefined || owner === null || tag === undefined
        ? 'fragment'
        : { subject: owner, tag };
    }
    const tag = layout.tagOf(subject);
    const parsed = parseKeyId(id);
    if (parsed.kind === 'tagged') return parsed.tag === tag ? { subject, tag } : 'tag-mismatch';
    const indexed = await tagHere(id);
    return indexed === undefined || indexed === tag ? { subject, tag } : 'id-taken';
  };
}

/** One attempt at moving a pair; undefined: the single slot's copy changed meanwhile. */
function movePairOnce(
  deps: PairMoverDeps,
  destination: Destination,
): (id: string, indexedBy: string | undefined) => Promise<PairMove | undefined> {
  const { runner, layout, single, runPairs, copies } = deps;
  return async (id, indexedBy) => {
    const { fields, pttl } = await copies.read(single.key(id));
    const indexes = (subject: string | undefined): string[] =>
      [...new Set([subject, indexedBy])].flatMap((s) =>
        s === undefined ? [] : indexesOf(single, s),
      );
    if (Object.keys(fields).length === 0)
      return (await copies.dropIfSame(single.key(id), fields, id, indexes(undefined)))
        ? 'gone'
        : undefined;
    const to = await destination(id, fields);
    if (typeof to === 'string') return to;
    // An id without a tag is found through its index entry: written first, so that the pair
    // is never here without it. SET NX: another subject's claim on the id is never replaced.
    if (parseKeyId(id).kind !== 'tagged' && fields.secret_hash !== undefined) {
      await runner.call(layout.keyTag(id), (c, k) => c.set(k, to.tag, 'NX'));
      if ((await storedTag(runner, layout, id)) !== to.tag) return 'id-taken';
    }
    // A fragment (a writer's revocation alone) merges only what it says of the end and use.
    const whole = fields.secret_hash !== undefined && fields.subject !== undefined;
    const adopted = await runPairs(
      ADOPT_PAIR,
      to.subject,
      pairsHere(layout, to.subject),
      { key: layout.key(id, to.subject) },
      {
        id,
        fields: flat(whole ? fields : { ...fields, subject: to.subject }),
        pttlMs: whole ? pttl : -1,
        channel: layout.channel,
      },
    );
    if (adopted === 'taken') return 'id-taken';
    if (adopted === 'fragment') return 'fragment';
    return (await copies.dropIfSame(
      single.key(id),
      fields,
      id,
      indexes(fields.subject ?? to.subject),
    ))
      ? adopted
      : undefined;
  };
}

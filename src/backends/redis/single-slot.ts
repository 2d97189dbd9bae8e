import { parseKeyId } from '../../identity/key-id.js';
import type { RedisLayout, SingleSlotLayout } from './layout.js';
import { pairsHere, storedTag, type PairRun } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import { ADOPT_PAIR, COPY_IF_ABSENT, DROP_IF_SAME } from './scripts.js';

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

/** Attempts at one move: each fails only when a writer changed the single slot's copy meanwhile. */
const MOVE_ATTEMPTS = 5;

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

/** A hash as HGETALL gives it, as the flat list of names and values the scripts take. */
const flat = (fields: Record<string, string>): string[] => Object.entries(fields).flat();

/**
 * Moves pairs, users and subjects' settings out of the single-slot layout, one at a time and
 * safely while gateways serve: each move copies into the layout of layout.ts (one script in
 * the destination's slot), then deletes the single slot's copy only while it is exactly what
 * was copied (one script in the single slot). A writer that changes it in between makes the
 * move start again, so nothing written there is lost; two gateways moving the same pair at
 * once both end with one copy. The two slots differ, so no step spans both.
 */
export function createSingleSlot(deps: SingleSlotDeps): SingleSlot {
  const { runner, layout, single, runPairs } = deps;
  const channel = layout.channel;

  const indexesOf = (subject: string): string[] => [
    single.subjectPairs(subject),
    single.subjectEnds(subject),
    single.subjectActive(subject),
    single.subjectLegacyKeys(subject),
  ];

  const read = (key: string) =>
    runner.call(key, async (c) => {
      const [fields, pttl] = await Promise.all([c.hgetall(key), c.pttl(key)]);
      return { fields, pttl };
    });

  const drop = async (
    key: string,
    fields: Record<string, string>,
    member: string,
    indexes: readonly string[],
  ): Promise<boolean> =>
    runner.run(DROP_IF_SAME, { hash: key, indexes }, { fields: flat(fields), member });

  /** Where the pair of an id is here, by its tag; undefined when it has none yet. */
  const tagHere = (id: string): Promise<string | undefined> => storedTag(runner, layout, id);

  /**
   * Whose pair the single slot's `fields` are, and whether it can move: a whole pair to its
   * subject's tag; a fragment (a writer's HSET of a revocation alone) into the pair here.
   */
  const destination = async (
    id: string,
    fields: Record<string, string>,
  ): Promise<{ subject: string; tag: string } | PairMove> => {
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

  const movePairOnce = async (
    id: string,
    indexedBy: string | undefined,
  ): Promise<PairMove | undefined> => {
    const { fields, pttl } = await read(single.key(id));
    const indexes = (subject: string | undefined): string[] =>
      [...new Set([subject, indexedBy])].flatMap((s) => (s === undefined ? [] : indexesOf(s)));
    if (Object.keys(fields).length === 0)
      return (await drop(single.key(id), fields, id, indexes(undefined))) ? 'gone' : undefined;
    const to = await destination(id, fields);
    if (typeof to === 'string') return to;
    // An id without a tag is found through its index entry: written first, so that the pair
    // is never here without it. SET NX: another subject's claim on the id is never replaced.
    if (parseKeyId(id).kind !== 'tagged' && fields.secret_hash !== undefined) {
      await runner.call(layout.keyTag(id), (c, k) => c.set(k, to.tag, 'NX'));
      if ((await tagHere(id)) !== to.tag) return 'id-taken';
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
        channel,
      },
    );
    if (adopted === 'taken') return 'id-taken';
    if (adopted === 'fragment') return 'fragment';
    return (await drop(single.key(id), fields, id, indexes(fields.subject ?? to.subject)))
      ? adopted
      : undefined;
  };

  const moveHash = async (from: string, to: string): Promise<HashMove> => {
    for (let attempt = 0; attempt < MOVE_ATTEMPTS; attempt += 1) {
      const { fields, pttl } = await read(from);
      if (Object.keys(fields).length === 0) return 'gone';
      const written = await runner.run(
        COPY_IF_ABSENT,
        { hash: to },
        { fields: flat(fields), pttlMs: pttl },
      );
      if (await drop(from, fields, '', [])) return written ? 'moved' : 'kept';
    }
    return 'busy';
  };

  const movePair = async (id: string, indexedBy?: string): Promise<PairMove> => {
    for (let attempt = 0; attempt < MOVE_ATTEMPTS; attempt += 1) {
      const outcome = await movePairOnce(id, indexedBy);
      if (outcome !== undefined) return outcome;
    }
    return 'busy';
  };

  return {
    layout: single,
    async holdsSubject(subject) {
      const keys = [...indexesOf(subject), single.subject(subject)];
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
    async inspectPair(id) {
      const { fields } = await read(single.key(id));
      if (Object.keys(fields).length === 0) return 'gone';
      const to = await destination(id, fields);
      return typeof to === 'string' ? to : 'moved';
    },
  };
}

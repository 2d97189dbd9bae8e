import type { PairRun } from './pair-runs.js';
import type { SingleSlot } from './single-slot.js';

/** A subject's pairs, gathered here before a script changes or lists them. */
export interface SubjectPairs {
  /** Moves what the subject still has in the single slot here: then one script sees it all. */
  moveHere(subject: string): Promise<void>;
  /** A pair script of the subject, once its pairs are all here. */
  run: PairRun;
}

export function subjectPairs(runPairs: PairRun, single: SingleSlot | undefined): SubjectPairs {
  const moveHere = async (subject: string): Promise<void> => {
    if (single !== undefined && (await single.holdsSubject(subject)))
      await single.moveSubject(subject);
  };
  return {
    moveHere,
    run: async (script, subject, place, keys, args) => {
      await moveHere(subject);
      return runPairs(script, subject, place, keys, args);
    },
  };
}

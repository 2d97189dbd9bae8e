import type { ScriptRunner } from './run-script.js';
import { COPY_IF_ABSENT, DROP_IF_SAME } from './scripts.js';

/** A hash as HGETALL gives it, as the flat list of names and values the scripts take. */
export const flat = (fields: Record<string, string>): string[] => Object.entries(fields).flat();

/** A hash as read, with its TTL (PTTL: -1 none). */
export interface HashCopy {
  readonly fields: Record<string, string>;
  readonly pttl: number;
}

/** The steps of a move out of the single slot that each touch one hash (and its indexes). */
export interface SlotCopies {
  read(key: string): Promise<HashCopy>;
  /** Writes `to` from `copy` unless it exists: whether it was written. */
  copyIfAbsent(to: string, copy: HashCopy): Promise<boolean>;
  /**
   * Deletes `key` and takes `member` out of `indexes`, only while it is exactly `fields`:
   * whether it did (false: a writer changed it since it was read).
   */
  dropIfSame(
    key: string,
    fields: Record<string, string>,
    member: string,
    indexes: readonly string[],
  ): Promise<boolean>;
}

export function slotCopies(runner: ScriptRunner): SlotCopies {
  return {
    read: (key) =>
      runner.call(key, async (c) => {
        const [fields, pttl] = await Promise.all([c.hgetall(key), c.pttl(key)]);
        return { fields, pttl };
      }),
    copyIfAbsent: (to, { fields, pttl }) =>
      runner.run(COPY_IF_ABSENT, { hash: to }, { fields: flat(fields), pttlMs: pttl }),
    dropIfSame: (key, fields, member, indexes) =>
      runner.run(DROP_IF_SAME, { hash: key, indexes }, { fields: flat(fields), member }),
  };
}

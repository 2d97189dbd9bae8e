import {
  auditFields,
  compareEventIds,
  eventIdMs,
  inBounds,
  parseAuditFields,
  rangeBounds,
  type AuditLog,
  type AuditSettings,
  type StoredAuditEvent,
} from '../../credentials/audit-log.js';

/** Subjects' logs are looked over for ones wholly past retention once every this many appends. */
const SWEEP_EVERY = 1000;

/**
 * The audit log in this process, as the Redis one behaves (redis-audit.ts): the fleet's list
 * and each subject's, each bounded (exactly here) and aged out by `retainSec`; ids in Redis's
 * form, from one clock, so an event has the same id in both lists.
 */
export function createMemoryAuditLog(settings: AuditSettings, now: () => number): AuditLog {
  const fleet: StoredAuditEvent[] = [];
  const subjects = new Map<string, StoredAuditEvent[]>();
  const waiters = new Set<() => void>();
  let last = { ms: 0, seq: 0 };
  let appends = 0;
  const oldestMs = (): number => now() - settings.retainSec * 1000;
  // Redis's rule for `*`: the clock's ms, or the last id's when the clock is behind it.
  const nextId = (): string => {
    const ms = now();
    last = ms > last.ms ? { ms, seq: 0 } : { ms: last.ms, seq: last.seq + 1 };
    return `${last.ms}-${last.seq}`;
  };
  const trim = (list: StoredAuditEvent[], max: number): void => {
    const floor = oldestMs();
    let drop = Math.max(0, list.length - max);
    while (drop < list.length && eventIdMs(list[drop]?.id ?? '0-0') < floor) drop += 1;
    list.splice(0, drop);
  };
  const sweep = (): void => {
    for (const [subject, list] of subjects) {
      trim(list, settings.maxEventsPerSubject);
      if (list.length === 0) subjects.delete(subject);
    }
  };
  const listOf = (subject: string | undefined): readonly StoredAuditEvent[] =>
    subject === undefined ? fleet : (subjects.get(subject) ?? []);
  const newer = (subject: string | undefined, after: string): StoredAuditEvent[] => {
    const floor = oldestMs();
    return listOf(subject).filter(
      (event) => compareEventIds(event.id, after) > 0 && eventIdMs(event.id) >= floor,
    );
  };
  return {
    append(event) {
      // Stored as Redis stores it, fields and all: what is read back is what a reader of the
      // stream would get.
      const stored = parseAuditFields(nextId(), auditFields(event));
      if (stored === undefined) return Promise.resolve();
      fleet.push(stored);
      trim(fleet, settings.maxEvents);
      if (event.subject !== undefined) {
        const list = subjects.get(event.subject) ?? [];
        list.push(stored);
        trim(list, settings.maxEventsPerSubject);
        subjects.set(event.subject, list);
      }
      appends += 1;
      if (appends % SWEEP_EVERY === 0) sweep();
      for (const wake of [...waiters]) wake();
      return Promise.resolve();
    },
    read(range) {
      const bounds = rangeBounds(range, oldestMs());
      const found = listOf(range.subject).filter((event) => inBounds(event.id, bounds));
      const ordered = range.order === 'asc' ? found : found.reverse();
      return Promise.resolve(ordered.slice(0, range.count));
    },
    follow(subject, after, waitMs) {
      const found = newer(subject, after);
      if (found.length > 0 || waitMs <= 0) return Promise.resolve(found);
      return new Promise((resolve) => {
        const done = (events: StoredAuditEvent[]): void => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(events);
        };
        const wake = (): void => {
          const events = newer(subject, after);
          if (events.length > 0) done(events);
        };
        const timer = setTimeout(() => done([]), waitMs);
        waiters.add(wake);
      });
    },
  };
}

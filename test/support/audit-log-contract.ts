import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  auditFields,
  compareEventIds,
  eventIdMs,
  type AuditEvent,
  type AuditLog,
  type AuditSettings,
} from '../../src/credentials/audit-log.js';

/** The bounds every log under test keeps: small, so a test fills them. */
export const AUDIT_TEST_SETTINGS: AuditSettings = {
  maxEvents: 200,
  maxEventsPerSubject: 20,
  retainSec: 3600,
};

/** Redis trims whole nodes of a stream (stream-node-max-entries, 100 by default). */
const NODE_ENTRIES = 100;

/** A clock the log reads, which a test may set: the real one until it does. */
export interface TestClock {
  now: () => number;
}

export interface AuditLogUnderTest {
  readonly log: AuditLog;
  /**
   * The same log through a connection of its own, as `keys audit --follow` reads it while
   * gateways write (a blocking read holds its connection); the same object in memory.
   */
  readonly reader: AuditLog;
  /** How many entries the log of `subject` (none: the fleet's) holds, trimmed or not. */
  length(subject?: string): Promise<number>;
  /** The time of the store's clock, which ids come from (Unix ms). */
  storeTimeMs(): Promise<number>;
  /** The raw fields of the log's entries, oldest first (a stream's XRANGE); none: memory. */
  rawEntries?(subject?: string): Promise<string[][]>;
  /** The TTL of a subject's log (ms); none: memory. */
  ttlMs?(subject: string): Promise<number>;
  close(): Promise<void>;
}

const event = (fields: Partial<AuditEvent> = {}): AuditEvent => ({
  at: new Date().toISOString(),
  action: 'create',
  actor: 'key:ak_contract',
  via: 'api',
  host: 'contract-host',
  from: '192.0.2.7',
  ...fields,
});

/**
 * What every audit log does (credentials/audit-log.ts), on the memory backend and on Redis
 * (standalone and Cluster): one event in the fleet's log and its subject's, read back as
 * written in either order and paged by id, bounded in length and by age, followed as it comes.
 */
export function auditLogContract(
  name: string,
  make: (clock: TestClock, settings: AuditSettings) => Promise<AuditLogUnderTest>,
): void {
  describe(`the audit log on ${name}`, () => {
    let clock: TestClock;
    let under: AuditLogUnderTest;
    let n = 0;
    /** A subject no other test of the file uses. */
    const subject = (): string => `audited-${process.pid}-${(n += 1)}`;

    beforeEach(async () => {
      clock = { now: Date.now };
      under = await make(clock, AUDIT_TEST_SETTINGS);
    });

    afterEach(async () => {
      await under.close();
    });

    it("appends an event to the fleet's log and its subject's, read back as written", async () => {
      const alice = subject();
      const bob = subject();
      await under.log.append(event({ subject: alice, key: 'ak_a1' }));
      await under.log.append(event({ subject: bob, key: 'ak_b1', action: 'revoke' }));
      await under.log.append(event({ action: 'unlock', network: '192.0.2.0' }));
      const fleet = await under.log.read({ order: 'desc', count: 3 });
      expect(fleet.map((e) => e.key ?? e.network)).toEqual(['192.0.2.0', 'ak_b1', 'ak_a1']);
      const own = await under.log.read({ subject: alice, order: 'desc', count: 10 });
      expect(own).toEqual([
        { ...event({ subject: alice, key: 'ak_a1' }), at: own[0]?.at, id: own[0]?.id },
      ]);
      expect(
        (await under.log.read({ subject: bob, order: 'asc', count: 10 })).map((e) => e.key),
      ).toEqual(['ak_b1']);
      if (under.rawEntries !== undefined) {
        // The stream holds the documented fields and nothing else (docs/redis-layout.md).
        const [raw] = await under.rawEntries(alice);
        expect(raw).toEqual(
          auditFields({ ...event({ subject: alice, key: 'ak_a1' }), at: own[0]?.at ?? '' }),
        );
      }
    });

    it('pages newest first before a cursor and oldest first after one, as ids order them', async () => {
      const s = subject();
      for (let i = 0; i < 5; i += 1) await under.log.append(event({ subject: s, key: `ak_${i}` }));
      const first = await under.log.read({ subject: s, order: 'desc', count: 2 });
      expect(first.map((e) => e.key)).toEqual(['ak_4', 'ak_3']);
      const second = await under.log.read({
        subject: s,
        order: 'desc',
        count: 2,
        before: first[1]?.id,
      });
      expect(second.map((e) => e.key)).toEqual(['ak_2', 'ak_1']);
      const up = await under.log.read({
        subject: s,
        order: 'asc',
        count: 10,
        after: second[1]?.id,
      });
      expect(up.map((e) => e.key)).toEqual(['ak_2', 'ak_3', 'ak_4']);
      const ids = up.map((e) => e.id);
      expect([...ids].sort(compareEventIds)).toEqual(ids);
    });

    it('reads between two instants, both included', async () => {
      const s = subject();
      for (let i = 0; i < 3; i += 1) await under.log.append(event({ subject: s, key: `ak_${i}` }));
      const all = await under.log.read({ subject: s, order: 'asc', count: 10 });
      const middle = eventIdMs(all[1]?.id ?? '0-0');
      const between = await under.log.read({
        subject: s,
        order: 'asc',
        count: 10,
        sinceMs: middle,
        untilMs: middle,
      });
      expect(between.map((e) => e.key)).toContain('ak_1');
      expect(between.every((e) => eventIdMs(e.id) === middle)).toBe(true);
    });

    it("keeps the fleet's log and each subject's to their bounds, the newest kept", async () => {
      const s = subject();
      const { maxEvents, maxEventsPerSubject } = AUDIT_TEST_SETTINGS;
      const total = maxEvents + 2 * NODE_ENTRIES + 50;
      for (let i = 0; i < total; i += 1)
        await under.log.append(event({ subject: s, key: `ak_${i}` }));
      const fleet = await under.length();
      const own = await under.length(s);
      // At least the bound, and at most a node more (exact in memory).
      expect(fleet).toBeGreaterThanOrEqual(maxEvents);
      expect(fleet).toBeLessThanOrEqual(maxEvents + NODE_ENTRIES);
      expect(own).toBeGreaterThanOrEqual(maxEventsPerSubject);
      expect(own).toBeLessThanOrEqual(maxEventsPerSubject + NODE_ENTRIES);
      const [newest] = await under.log.read({ subject: s, order: 'desc', count: 1 });
      expect(newest?.key).toBe(`ak_${total - 1}`);
    });

    it('never reads an event past the retention, and trims them on the next append', async () => {
      const s = subject();
      const old = 2 * NODE_ENTRIES + 10;
      for (let i = 0; i < old; i += 1)
        await under.log.append(event({ subject: s, key: `ak_old${i}` }));
      const [last] = await under.log.read({ subject: s, order: 'desc', count: 1 });
      const lastMs = eventIdMs(last?.id ?? '0-0');
      // The store's clock past the last old event: what comes now has a later id.
      while ((await under.storeTimeMs()) <= lastMs) await new Promise(setImmediate);
      clock.now = () => lastMs + 1 + AUDIT_TEST_SETTINGS.retainSec * 1000;
      expect(await under.log.read({ subject: s, order: 'desc', count: 1000 })).toEqual([]);
      await under.log.append(event({ subject: s, key: 'ak_new' }));
      const kept = await under.log.read({ subject: s, order: 'asc', count: 1000 });
      expect(kept.map((e) => e.key)).toEqual(['ak_new']);
      // Trimmed, not only hidden: at most a node of the old ones is left.
      expect(await under.length(s)).toBeLessThanOrEqual(NODE_ENTRIES + 1);
      expect(await under.length()).toBeLessThanOrEqual(NODE_ENTRIES + 1);
      if (under.ttlMs !== undefined) {
        // A subject never touched again: its log leaves a retention after its last event.
        const ttl = await under.ttlMs(s);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(AUDIT_TEST_SETTINGS.retainSec * 1000);
      }
    });

    it('follows a log: what came after the cursor at once, else the first event to come', async () => {
      const s = subject();
      await under.log.append(event({ subject: s, key: 'ak_before' }));
      const [seen] = await under.log.read({ subject: s, order: 'desc', count: 1 });
      const cursor = seen?.id ?? '0-0';
      expect(await under.reader.follow(s, cursor, 0)).toEqual([]);
      expect(await under.reader.follow(s, cursor, 50)).toEqual([]);
      // As `keys audit --follow` does: wait after wait until something comes (a store may
      // end a wait early); the append comes while one is under way.
      const waiting = (async () => {
        for (;;) {
          const events = await under.reader.follow(s, cursor, 5000);
          if (events.length > 0) return events;
        }
      })();
      await under.log.append(event({ subject: s, key: 'ak_after' }));
      expect((await waiting).map((e) => e.key)).toEqual(['ak_after']);
      const fleet = await under.reader.follow(undefined, cursor, 0);
      expect(fleet.map((e) => e.key)).toContain('ak_after');
    });
  });
}

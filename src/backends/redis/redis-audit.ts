import {
  auditFields,
  inBounds,
  parseAuditFields,
  rangeBounds,
  type AuditLog,
  type AuditSettings,
  type RangeBound,
  type StoredAuditEvent,
} from '../../credentials/audit-log.js';
import type { RedisLayout } from './layout.js';
import type { ScriptRunner } from './run-script.js';
import { MalformedReplyError } from './script-replies.js';

/**
 * The audit log on Redis (docs/redis-layout.md, Key events): two streams per event, the
 * fleet's (`auditEvents`, one slot of its own) and its subject's (`subjectEvents`, in the
 * subject's slot beside its pairs), each appended to in one MULTI with its trims: `XADD MAXLEN ~`
 * bounds its length, `XTRIM MINID ~` drops what is older than the retention, and a subject's
 * stream expires a retention after its last event, so a subject never touched again leaves
 * nothing behind. The two are in different slots (a Cluster runs no MULTI across slots), so
 * each is its own round trip, sent together; a failure of either fails the append (the trail
 * counts it and logs the event: credentials/audit-log.ts).
 *
 * `~` trims whole macro nodes (stream-node-max-entries, 100 by default), so a stream holds up
 * to about that many more than its bound, and events older than the retention until their
 * node goes: a read never returns those (rangeBounds).
 */
export function createRedisAuditLog(
  runner: ScriptRunner,
  layout: RedisLayout,
  settings: AuditSettings,
  now: () => number,
  /** The runner's bound on one call (credentials.redis.commandTimeoutMs). */
  commandTimeoutMs: number,
): AuditLog {
  const retainMs = settings.retainSec * 1000;
  const oldestMs = (): number => now() - retainMs;
  const streamOf = (subject: string | undefined): string =>
    subject === undefined ? layout.auditEvents : layout.subjectEvents(subject);
  const append = (stream: string, maxLen: number, fields: readonly string[], expire: boolean) =>
    runner.call(stream, async (client, key) => {
      const multi = client
        .multi()
        .xadd(key, 'MAXLEN', '~', maxLen, '*', ...fields)
        .xtrim(key, 'MINID', '~', `${Math.max(0, oldestMs())}-0`);
      if (expire) multi.pexpire(key, retainMs);
      failedReply(await multi.exec());
    });
  return {
    async append(event) {
      const fields = auditFields(event);
      await Promise.all([
        append(layout.auditEvents, settings.maxEvents, fields, false),
        ...(event.subject === undefined
          ? []
          : [
              append(
                layout.subjectEvents(event.subject),
                settings.maxEventsPerSubject,
                fields,
                true,
              ),
            ]),
      ]);
    },
    async read(range) {
      const bounds = rangeBounds(range, oldestMs());
      const low = bound(bounds.low);
      const high = bounds.high === undefined ? '+' : bound(bounds.high);
      const stream = streamOf(range.subject);
      const reply = await runner.call(stream, (client, key) =>
        range.order === 'asc'
          ? client.xrange(key, low, high, 'COUNT', range.count)
          : client.xrevrange(key, high, low, 'COUNT', range.count),
      );
      return entries(reply);
    },
    // XREAD BLOCK holds the connection it waits on, and every command queued behind it: only a
    // reader of its own follows (`keys audit --follow`, on the CLI's connection), never a
    // gateway. A wait stays within half the call's bound (BLOCK 0 would be for ever).
    async follow(subject, after, waitMs) {
      const floor = rangeBounds({ order: 'asc', count: 1 }, oldestMs());
      const blockMs = Math.min(waitMs, Math.floor(commandTimeoutMs / 2));
      const reply = await runner.call(streamOf(subject), (client, key) =>
        blockMs > 0
          ? client.xread('COUNT', 1000, 'BLOCK', blockMs, 'STREAMS', key, after)
          : client.xread('COUNT', 1000, 'STREAMS', key, after),
      );
      return readEntries(reply).filter((event) => inBounds(event.id, floor));
    },
  };
}

/** A bound in XRANGE's syntax: `(` before an id that is left out (Redis 6.2). */
function bound({ id, inclusive }: RangeBound): string {
  return inclusive ? id : `(${id}`;
}

/** EXEC's replies: the first command that failed fails the append, as its own error. */
function failedReply(replies: [Error | null, unknown][] | null): void {
  // null: the transaction was discarded (nothing is WATCHed here: never expected).
  if (replies === null) throw new Error('the audit transaction was discarded');
  for (const [error] of replies) if (error !== null) throw error;
}

/** XRANGE's reply: `[[id, [field, value, …]], …]`; entries that are none of ours are left out. */
function entries(reply: unknown): StoredAuditEvent[] {
  if (!Array.isArray(reply)) throw malformed('the reply', reply);
  return reply.flatMap((entry: unknown, i) => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !Array.isArray(entry[1]))
      throw malformed(`[${i}]`, entry);
    const fields = (entry[1] as unknown[]).map((field) => (typeof field === 'string' ? field : ''));
    const event = parseAuditFields(entry[0], fields);
    return event === undefined ? [] : [event];
  });
}

/**
 * XREAD's reply for one stream: null when nothing came; `[[key, entries]]` over RESP2, and
 * `[key, entries]` (a map, flattened) over RESP3 in ioredis's legacy shapes.
 */
function readEntries(reply: unknown): StoredAuditEvent[] {
  if (reply === null) return [];
  if (!Array.isArray(reply)) throw malformed('the reply', reply);
  const [first, second] = reply as unknown[];
  if (Array.isArray(first)) return entries((first as unknown[])[1]);
  if (typeof first === 'string') return entries(second);
  throw malformed('[0]', first);
}

function malformed(at: string, value: unknown): MalformedReplyError {
  const kind =
    value === null ? 'null' : Array.isArray(value) ? `an array of ${value.length}` : typeof value;
  return new MalformedReplyError(`malformed stream reply: ${at} is ${kind}`);
}

import type { Identity } from '../identity/identity.js';
import type { KeySummary, RolledPair } from './credential-store.js';

/**
 * The audit trail of key events: every change of a pair or a user leaves one event saying
 * who made it, through what, from where, when and on which host; never a secret, a hash or a
 * password (no field could hold one). A store keeps the events in two bounded logs: the
 * fleet's, every event (`keys audit`), and each subject's, its own (`GET /keys/events`).
 */

/**
 * What the gateway and its CLI record. `expiry_set` is a writer's (a web application that
 * moves a pair's `expires_at`, docs/redis-layout.md): no path of the gateway sets one alone.
 */
export const AUDIT_ACTIONS = [
  'create',
  'roll',
  'revoke',
  'expiry_set',
  'unlock',
  'user_add',
  'user_passwd',
  'user_remove',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One event as stored. Read back, `action`, `actor` and `via` are as the writer wrote them. */
export interface AuditEvent {
  /** When the change was made (ISO 8601 UTC), by the clock of the process that made it. */
  readonly at: string;
  readonly action: string;
  /**
   * Who, `<kind>:<id>`: `key:<key id>` (a Basic caller), `user:<username>` (a portal session,
   * or a token the gateway issued for the user), `token:<subject>` (a token of a configured
   * issuer), `os:<user>` (the operating-system user who ran the CLI); a writer's own kind.
   */
  readonly actor: string;
  /** Through what: `api`, `portal`, `cli`, or a writer's own name. */
  readonly via: string;
  /** The host name of the gateway (or of the machine the CLI ran on). */
  readonly host: string;
  /** The client's address (API and portal; the CLI has none). */
  readonly from?: string | undefined;
  /** The request's X-Request-Id (API and portal): its access line has the same. */
  readonly requestId?: string | undefined;
  /** The subject whose pair or user changed; none when unknown (an unlock of an address). */
  readonly subject?: string | undefined;
  /** The pair: made, rolled, revoked, given an expiry, or unlocked. */
  readonly key?: string | undefined;
  /** A roll's new pair. */
  readonly successor?: string | undefined;
  /** The expiry of the pair made (create, roll's successor) or set (expiry_set). */
  readonly expiresAt?: string | undefined;
  /** When a rolled pair stops working: the overlap's end, or the roll itself (revoked). */
  readonly endsAt?: string | undefined;
  /** The scopes of the pair or user made, space-separated. */
  readonly scopes?: string | undefined;
  readonly username?: string | undefined;
  /** An unlocked client network (`keys unlock --address`), as the lockout counts it. */
  readonly network?: string | undefined;
}

/** An event read back, with its id: `<Unix ms>-<sequence>`, in the order of its log. */
export interface StoredAuditEvent extends AuditEvent {
  readonly id: string;
}

/** Each field's name as stored (docs/redis-layout.md), in the order it is written. */
const FIELD_NAMES = {
  at: 'at',
  action: 'action',
  subject: 'subject',
  key: 'key',
  successor: 'successor',
  expiresAt: 'expires_at',
  endsAt: 'ends_at',
  scopes: 'scopes',
  username: 'username',
  network: 'network',
  actor: 'actor',
  via: 'via',
  from: 'from',
  host: 'host',
  requestId: 'request_id',
} as const satisfies Record<keyof AuditEvent, string>;

const FIELDS = Object.entries(FIELD_NAMES) as [keyof AuditEvent, string][];
const BY_STORED_NAME = new Map(FIELDS.map(([field, name]) => [name, field]));

/** The event as `name value` pairs, in one flat list (XADD's shape); absent fields left out. */
export function auditFields(event: AuditEvent): string[] {
  return FIELDS.flatMap(([field, name]) => {
    const value = event[field];
    return value === undefined ? [] : [name, value];
  });
}

/**
 * An event from its stored fields (a flat `name value` list). A writer's unknown fields are
 * ignored; an entry without an action is none of ours (undefined); one without `at` is dated
 * by its id.
 */
export function parseAuditFields(
  id: string,
  flat: readonly string[],
): StoredAuditEvent | undefined {
  const fields: Partial<Record<keyof AuditEvent, string>> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = BY_STORED_NAME.get(flat[i] ?? '');
    if (field !== undefined) fields[field] = flat[i + 1] ?? '';
  }
  if (fields.action === undefined) return undefined;
  return {
    ...fields,
    id,
    at: fields.at ?? new Date(eventIdMs(id)).toISOString(),
    action: fields.action,
    actor: fields.actor ?? '',
    via: fields.via ?? '',
    host: fields.host ?? '',
  };
}

/**
 * The stored form of an event, with its id when it has one: what `keys audit --json` prints a
 * line of, and what the log line of an event not written holds.
 */
export function auditRecord(event: AuditEvent | StoredAuditEvent): Record<string, string> {
  const flat = auditFields(event);
  const record: Record<string, string> = 'id' in event ? { id: event.id } : {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i] ?? ''] = flat[i + 1] ?? '';
  return record;
}

/** An event id: Redis's stream id form, `<Unix ms>-<sequence>`. */
export const AUDIT_EVENT_ID = /^\d{1,20}-\d{1,20}$/;

/** The greatest sequence of an id (Redis stream ids are two unsigned 64-bit numbers). */
const MAX_SEQUENCE = 18_446_744_073_709_551_615n;

function idParts(id: string): [bigint, bigint] {
  const [ms = '0', seq = '0'] = id.split('-');
  return [BigInt(ms), BigInt(seq)];
}

/** Orders two event ids as their log does. */
export function compareEventIds(a: string, b: string): number {
  const [msA, seqA] = idParts(a);
  const [msB, seqB] = idParts(b);
  if (msA !== msB) return msA < msB ? -1 : 1;
  return seqA === seqB ? 0 : seqA < seqB ? -1 : 1;
}

/** When the event was appended (Unix ms), as its id says. */
export function eventIdMs(id: string): number {
  return Number(idParts(id)[0]);
}

/** Which events one read returns: of one log, between bounds, in an order, a page at most. */
export interface AuditRange {
  /** This subject's log; none: the fleet's. */
  readonly subject?: string | undefined;
  readonly order: 'asc' | 'desc';
  /** At most this many events. */
  readonly count: number;
  /** Only events after this id (a cursor: the last id of the previous page, ascending). */
  readonly after?: string | undefined;
  /** Only events before this id (a cursor, descending). */
  readonly before?: string | undefined;
  /** Only events appended at or after this instant (Unix ms). */
  readonly sinceMs?: number | undefined;
  /** Only events appended at or before this instant (Unix ms). */
  readonly untilMs?: number | undefined;
}

/** One end of a range: an id, and whether the id itself is in it. */
export interface RangeBound {
  readonly id: string;
  readonly inclusive: boolean;
}

/**
 * The tightest bounds of `range`, retention included: nothing appended before `oldestMs`
 * is read, whether or not a trim has removed it yet (streams are trimmed in whole nodes).
 * Undefined `high`: up to the newest. Pure.
 */
export function rangeBounds(
  range: AuditRange,
  oldestMs: number,
): { readonly low: RangeBound; readonly high: RangeBound | undefined } {
  const lows: RangeBound[] = [{ id: `${Math.max(0, oldestMs)}-0`, inclusive: true }];
  if (range.sinceMs !== undefined) lows.push({ id: `${range.sinceMs}-0`, inclusive: true });
  if (range.after !== undefined) lows.push({ id: range.after, inclusive: false });
  const highs: RangeBound[] = [];
  if (range.untilMs !== undefined)
    highs.push({ id: `${range.untilMs}-${MAX_SEQUENCE}`, inclusive: true });
  if (range.before !== undefined) highs.push({ id: range.before, inclusive: false });
  // The later low and the earlier high; on the same id, the exclusive one is the tighter.
  const tighter = (sign: 1 | -1) => (a: RangeBound, b: RangeBound) => {
    const order = compareEventIds(a.id, b.id) * sign;
    if (order !== 0) return order > 0 ? a : b;
    return a.inclusive ? b : a;
  };
  const low = lows.reduce(tighter(1));
  const high = highs.length === 0 ? undefined : highs.reduce(tighter(-1));
  return { low, high };
}

/** True when `id` lies between the bounds of rangeBounds. */
export function inBounds(id: string, { low, high }: ReturnType<typeof rangeBounds>): boolean {
  const above = compareEventIds(id, low.id);
  if (above < 0 || (above === 0 && !low.inclusive)) return false;
  if (high === undefined) return true;
  const below = compareEventIds(id, high.id);
  return below < 0 || (below === 0 && high.inclusive);
}

/** How much a store keeps (`audit.*`). */
export interface AuditSettings {
  /** The fleet's log keeps at least this many events (a trim removes whole blocks of them). */
  readonly maxEvents: number;
  /** Each subject's log keeps at least this many. */
  readonly maxEventsPerSubject: number;
  /** An event is kept this long (and never read after). */
  readonly retainSec: number;
}

/** The defaults of `audit.*`. */
export const DEFAULT_AUDIT_SETTINGS: AuditSettings = {
  maxEvents: 100_000,
  maxEventsPerSubject: 1000,
  retainSec: 90 * 86_400,
};

/** Where a store keeps the events. Every method throws GatewayError when the store cannot answer. */
export interface AuditLog {
  /** Appends the event to the fleet's log, and to its subject's when it names one. */
  append(event: AuditEvent): Promise<void>;
  /** The events of `range` in its order. */
  read(range: AuditRange): Promise<StoredAuditEvent[]>;
  /**
   * The events after `after` of one log (a subject's, or the fleet's), oldest first; when
   * there are none yet, waits up to `waitMs` for the first to come ([] if none came: a store
   * may wait less). A store may hold its connection while it waits: for a reader of its own.
   */
  follow(subject: string | undefined, after: string, waitMs: number): Promise<StoredAuditEvent[]>;
}

/** What made a change: who, through what, from where. */
export interface AuditOrigin {
  readonly actor: string;
  readonly via: string;
  readonly from?: string | undefined;
  readonly requestId?: string | undefined;
}

/** The change itself: an event without its origin, time and host. */
export type AuditChange = Omit<
  AuditEvent,
  'at' | 'actor' | 'via' | 'from' | 'requestId' | 'host'
> & { readonly action: AuditAction };

/** Where the changes are recorded: a log, with what to do when an append fails. */
export interface AuditTrail {
  /** The log itself, to read. */
  readonly log: AuditLog;
  /**
   * Appends the event of `change`. Never rejects: the change it records is made already, so a
   * failed append is handed to the trail's `failed` (a metric and a log line with the event),
   * never turned into the change's failure.
   */
  record(origin: AuditOrigin, change: AuditChange): Promise<void>;
}

export interface AuditTrailOptions {
  /** The host name events carry (os.hostname()). */
  readonly host: string;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** Told of every event that could not be appended, with why. */
  readonly failed: (event: AuditEvent, error: unknown) => void;
}

export function createAuditTrail(log: AuditLog, options: AuditTrailOptions): AuditTrail {
  return {
    log,
    async record(origin, change) {
      const event: AuditEvent = {
        ...change,
        ...origin,
        at: new Date(options.now()).toISOString(),
        host: options.host,
      };
      try {
        await log.append(event);
      } catch (error) {
        options.failed(event, error);
      }
    },
  };
}

/**
 * The actor of a verified caller: its pair for Basic, its user for a token the gateway issued
 * (the portal's visits act as that user too), else the token's subject.
 */
export function actorOf(identity: Identity): string {
  if (identity.method === 'basic' && identity.key !== undefined) return `key:${identity.key}`;
  if (identity.username !== undefined) return `user:${identity.username}`;
  return `token:${identity.subject}`;
}

/** A list of scopes as an event stores them: space-separated, as Redis keeps them. */
export function scopesField(scopes: readonly string[]): string | undefined {
  return scopes.length === 0 ? undefined : scopes.join(' ');
}

/** A pair made: its subject, id, expiry and scopes. */
export function createdChange(pair: KeySummary): AuditChange {
  return {
    action: 'create',
    subject: pair.subject,
    key: pair.key,
    expiresAt: pair.expiresAt,
    scopes: scopesField(pair.scopes),
  };
}

export function revokedChange(pair: Pick<KeySummary, 'subject' | 'key'>): AuditChange {
  return { action: 'revoke', subject: pair.subject, key: pair.key };
}

/** A roll: the pair, its successor (and the expiry it carries on), and when the pair ends. */
export function rolledChange({ rolled, successor }: RolledPair): AuditChange {
  return {
    action: 'roll',
    subject: rolled.subject,
    key: rolled.key,
    successor: successor.key,
    expiresAt: successor.expiresAt,
    endsAt: rolled.status === 'revoked' ? rolled.revokedAt : rolled.expiresAt,
  };
}

/**
 * An event as the holder of its subject sees it (`GET /keys/events`): its fields as stored
 * but the host names of the operator's machines, and an operator's own account name, which
 * are the operator's business; the subject is the holder's own.
 */
export interface KeyEventView {
  // Not readonly: the type of openapi/api-schemas' KeyEvent, which a test holds it equal to.
  id: string;
  at: string;
  action: string;
  /** As stored; `operator` for a change made with the CLI. */
  actor: string;
  via: string;
  from?: string;
  request_id?: string;
  key?: string;
  successor?: string;
  expires_at?: string;
  ends_at?: string;
  scopes?: string;
  username?: string;
}

export function keyEventView(event: StoredAuditEvent): KeyEventView {
  const optional = (name: keyof KeyEventView, value: string | undefined) =>
    value === undefined ? {} : { [name]: value };
  return {
    id: event.id,
    at: event.at,
    action: event.action,
    actor: event.actor.startsWith('os:') ? 'operator' : event.actor,
    via: event.via,
    ...optional('from', event.from),
    ...optional('request_id', event.requestId),
    ...optional('key', event.key),
    ...optional('successor', event.successor),
    ...optional('expires_at', event.expiresAt),
    ...optional('ends_at', event.endsAt),
    ...optional('scopes', event.scopes),
    ...optional('username', event.username),
  };
}

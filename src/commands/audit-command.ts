import {
  AUDIT_ACTIONS,
  auditRecord,
  compareEventIds,
  type AuditLog,
  type StoredAuditEvent,
} from '../credentials/audit-log.js';
import { parseDurationSec, parseRfc3339 } from '../credentials/key-expiry.js';
import { KEY_ID, SUBJECT } from '../identity/identity-formats.js';
import type { AdminStore, Output } from './admin-commands.js';
import type { CliCommand } from './cli-command.js';
import { CliError, EXIT } from './cli-error.js';
import { runAdmin, withJson } from './store-command.js';

/** `--limit` when not given, and its largest value. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 100_000;
/** Events read per round trip, newest first, until `--limit` of them match. */
const READ_BATCH = 1000;
/** How long one wait of `--follow` blocks in Redis (XREAD BLOCK): a signal is heard within it. */
const FOLLOW_WAIT_MS = 1000;

/** What `keys audit` was asked, as given. */
export interface AuditOptions {
  readonly subject?: string | undefined;
  readonly key?: string | undefined;
  readonly action?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly limit?: string | undefined;
  readonly follow: boolean;
}

/** The options read: which log, which events of it, how many. */
export interface AuditQuery {
  readonly subject?: string | undefined;
  readonly key?: string | undefined;
  readonly actions?: ReadonlySet<string> | undefined;
  readonly sinceMs?: number | undefined;
  readonly untilMs?: number | undefined;
  readonly limit: number;
  readonly follow: boolean;
}

/** `--since`/`--until`: a duration ago (`90d`, `12h`, `30m`, `3600s`) or an RFC 3339 time. */
function instantOption(name: string, text: string, nowMs: number): number {
  const seconds = parseDurationSec(text);
  if (seconds !== undefined) return nowMs - seconds * 1000;
  const at = parseRfc3339(text);
  if (at === undefined)
    throw new CliError(
      `--${name} must be a duration ago (90d, 12h, 30m, 3600s) or an RFC 3339 date-time with an offset`,
      EXIT.usage,
    );
  return at;
}

/** The options of `keys audit`, checked before the store is opened. Pure but for `nowMs`. */
export function parseAuditOptions(options: AuditOptions, nowMs: number): AuditQuery {
  const { subject, key } = options;
  if (subject !== undefined && !SUBJECT.pattern.test(subject))
    throw new CliError(`--subject must be ${SUBJECT.rule}`, EXIT.usage);
  if (key !== undefined && !KEY_ID.pattern.test(key))
    throw new CliError(`--key must be a key id: ${KEY_ID.rule}`, EXIT.usage);
  let actions: Set<string> | undefined;
  if (options.action !== undefined) {
    actions = new Set(options.action.split(','));
    const known: readonly string[] = AUDIT_ACTIONS;
    if (![...actions].every((action) => known.includes(action)))
      throw new CliError(
        `--action must be one or more of ${AUDIT_ACTIONS.join(', ')}, comma-separated`,
        EXIT.usage,
      );
  }
  const limit = options.limit === undefined ? DEFAULT_LIMIT : Number(options.limit);
  if (options.limit !== undefined && !/^\d{1,6}$/.test(options.limit)) throw limitError();
  if (limit < 1 || limit > MAX_LIMIT) throw limitError();
  const sinceMs =
    options.since === undefined ? undefined : instantOption('since', options.since, nowMs);
  const untilMs =
    options.until === undefined ? undefined : instantOption('until', options.until, nowMs);
  if (options.follow && untilMs !== undefined)
    throw new CliError('--follow waits for events to come: it takes no --until', EXIT.usage);
  return { subject, key, actions, sinceMs, untilMs, limit, follow: options.follow };
}

const limitError = (): CliError =>
  new CliError(`--limit must be a whole number from 1 to ${MAX_LIMIT}`, EXIT.usage);

/** Whether an event passes the filters a log's range does not apply (key, action). */
export function matches(query: AuditQuery, event: StoredAuditEvent): boolean {
  if (query.actions !== undefined && !query.actions.has(event.action)) return false;
  if (query.key !== undefined && event.key !== query.key && event.successor !== query.key)
    return false;
  // A writer's entry in a subject's log of another subject's (never the gateway's).
  return query.subject === undefined || event.subject === query.subject;
}

/**
 * One event as a text line: its time and action, then `name=value` for each other field it
 * has, in the stored order (values hold no space: ids, names, addresses, times; a writer's
 * other value is quoted as JSON).
 */
export function auditLine(event: StoredAuditEvent): string {
  const pairs = Object.entries(auditRecord(event))
    .filter(([name]) => name !== 'id' && name !== 'at' && name !== 'action')
    .map(([name, value]) => `${name}=${/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  return [event.at, event.action.padEnd(11), ...pairs].join(' ');
}

/**
 * The `limit` newest events of the query's log that match it (and none after `upTo`), oldest
 * first: read newest first, a batch at a time, until enough match or the range is read.
 */
async function newestMatching(
  log: AuditLog,
  query: AuditQuery,
  upTo: string | undefined,
): Promise<StoredAuditEvent[]> {
  const found: StoredAuditEvent[] = [];
  let before: string | undefined;
  for (;;) {
    const batch = await log.read({
      subject: query.subject,
      order: 'desc',
      count: READ_BATCH,
      before,
      sinceMs: query.sinceMs,
      untilMs: query.untilMs,
    });
    for (const event of batch) {
      // Appended since the follow began: --follow prints it.
      if (upTo !== undefined && compareEventIds(event.id, upTo) > 0) continue;
      if (!matches(query, event)) continue;
      found.push(event);
      if (found.length === query.limit) return found.reverse();
    }
    before = batch.at(-1)?.id;
    if (batch.length < READ_BATCH || before === undefined) return found.reverse();
  }
}

/**
 * `keys audit`: the newest events that match, oldest first, a line each (`--json`: one JSON
 * object a line); with `--follow`, then every new one as it comes (XREAD BLOCK), until SIGINT
 * or SIGTERM, which end it with exit 0 within a wait.
 */
export async function auditCommand(
  { audit: log }: AdminStore,
  output: Output,
  query: AuditQuery,
  signals: NodeJS.EventEmitter = process,
): Promise<void> {
  const show = (event: StoredAuditEvent): void =>
    output.write(`${output.json ? JSON.stringify(auditRecord(event)) : auditLine(event)}\n`);
  if (!query.follow) {
    for (const event of await newestMatching(log, query, undefined)) show(event);
    return;
  }
  // Where the follow starts: the newest event now (read first, so nothing appended meanwhile
  // is missed or shown twice); none: from the start of what is kept.
  const [newest] = await log.read({ subject: query.subject, order: 'desc', count: 1 });
  let cursor = newest?.id ?? '0-0';
  for (const event of await newestMatching(log, query, cursor)) show(event);
  let stopping = false;
  const stop = (): void => {
    stopping = true;
  };
  signals.on('SIGINT', stop);
  signals.on('SIGTERM', stop);
  try {
    while (!stopping) {
      for (const event of await log.follow(query.subject, cursor, FOLLOW_WAIT_MS)) {
        cursor = event.id;
        if (matches(query, event)) show(event);
      }
    }
  } finally {
    signals.off('SIGINT', stop);
    signals.off('SIGTERM', stop);
  }
}

/** `keys audit`: the audit trail's events (docs/cli.md). */
export const auditCli: CliCommand = (yargs) =>
  yargs.command(
    'audit',
    'Show the audit trail: who changed which pair or user, when, from where',
    (c) =>
      withJson(c)
        .option('subject', { type: 'string', describe: "only this subject's events" })
        .option('key', { type: 'string', describe: 'only the events of this pair' })
        .option('action', {
          type: 'string',
          describe: `only these actions, comma-separated: ${AUDIT_ACTIONS.join(', ')}`,
        })
        .option('since', {
          type: 'string',
          describe: 'only events since: a duration ago (24h, 7d) or an RFC 3339 time',
        })
        .option('until', {
          type: 'string',
          describe: 'only events until: a duration ago or an RFC 3339 time',
        })
        .option('limit', {
          type: 'string',
          describe: `at most this many, the newest (1 to ${MAX_LIMIT}; ${DEFAULT_LIMIT} if not given)`,
        })
        .option('follow', {
          type: 'boolean',
          default: false,
          describe: 'then print each new event as it comes, until Ctrl-C',
        })
        .example('$0 keys audit --subject alice --since 7d', "alice's events of the last week")
        .example(
          '$0 keys audit --action revoke,roll --follow --json',
          'revocations and rolls as they happen, a JSON object a line',
        ),
    (args) => {
      // Checked before the store is opened.
      const query = parseAuditOptions(args, Date.now());
      return runAdmin(args, (_config, admin, out) => auditCommand(admin, out, query));
    },
  );

import { describe, expect, it } from 'vitest';
import {
  actorOf,
  auditFields,
  auditRecord,
  compareEventIds,
  createAuditTrail,
  inBounds,
  keyEventView,
  parseAuditFields,
  rangeBounds,
  type AuditEvent,
  type AuditLog,
} from '../../../src/credentials/audit-log.js';
import { readDoc, section } from '../../support/markdown.js';

const EVENT: AuditEvent = {
  at: '2026-11-22T10:00:00.000Z',
  action: 'roll',
  actor: 'key:ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
  via: 'api',
  host: 'gw-1',
  from: '192.0.2.7',
  requestId: 'req-1',
  subject: 'alice',
  key: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
  successor: 'ak_2bd80_Vq3WJ0bC7rUZ1ikE6fXnLtHd1S7yYc',
  endsAt: '2026-11-22T11:00:00.000Z',
};

describe('an audit event as stored', () => {
  it('is written field by field in the documented names, leaving out what it lacks', () => {
    expect(auditFields(EVENT)).toEqual([
      'at',
      '2026-11-22T10:00:00.000Z',
      'action',
      'roll',
      'subject',
      'alice',
      'key',
      'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
      'successor',
      'ak_2bd80_Vq3WJ0bC7rUZ1ikE6fXnLtHd1S7yYc',
      'ends_at',
      '2026-11-22T11:00:00.000Z',
      'actor',
      'key:ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
      'via',
      'api',
      'from',
      '192.0.2.7',
      'host',
      'gw-1',
      'request_id',
      'req-1',
    ]);
  });

  it('reads back as written, a writer’s unknown fields ignored', () => {
    const read = parseAuditFields('1795341600000-3', [...auditFields(EVENT), 'note', 'x']);
    expect(read).toEqual({ ...EVENT, id: '1795341600000-3' });
  });

  it('reads a writer’s entry without a time as dated by its id, and one without an action as none', () => {
    expect(
      parseAuditFields('1795341600000-0', ['action', 'revoke', 'key', 'k1', 'via', 'webapp']),
    ).toEqual({
      id: '1795341600000-0',
      at: '2026-11-22T10:00:00.000Z',
      action: 'revoke',
      key: 'k1',
      actor: '',
      via: 'webapp',
      host: '',
    });
    expect(parseAuditFields('1-0', ['key', 'k1'])).toBeUndefined();
  });

  it('has the fields docs/redis-layout.md tells a writer to append, in its order', () => {
    const every = { ...EVENT, expiresAt: 'e', scopes: 's', username: 'u', network: 'n' };
    const names = auditFields(every).filter((_, i) => i % 2 === 0);
    const documented = section(readDoc('docs/redis-layout.md'), '### Key events')
      .split('\n')
      .filter((line) => /^\| [a-z_]+ +\|/.test(line))
      .map((line) => line.split('|')[1]?.trim());
    expect(documented).toEqual(names);
  });

  it('prints as a record of its stored names with its id', () => {
    expect(auditRecord({ ...EVENT, id: '5-0' })).toMatchObject({
      id: '5-0',
      ends_at: '2026-11-22T11:00:00.000Z',
      request_id: 'req-1',
    });
    expect(auditRecord(EVENT)).not.toHaveProperty('id');
  });
});

describe('the holder’s view of an event', () => {
  it('leaves out the host and the subject, and names an operator by role only', () => {
    const view = keyEventView({ ...EVENT, id: '5-0', actor: 'os:root', via: 'cli' });
    expect(view).toEqual({
      id: '5-0',
      at: EVENT.at,
      action: 'roll',
      actor: 'operator',
      via: 'cli',
      from: '192.0.2.7',
      request_id: 'req-1',
      key: EVENT.key,
      successor: EVENT.successor,
      ends_at: EVENT.endsAt,
    });
    expect(keyEventView({ ...EVENT, id: '5-0' }).actor).toBe(EVENT.actor);
  });
});

describe('the actor of a caller', () => {
  it('is the pair of a Basic caller, the user of a gateway token or a session, else the token’s subject', () => {
    expect(actorOf({ subject: 's', method: 'basic', key: 'ak_1', scopes: [] })).toBe('key:ak_1');
    expect(actorOf({ subject: 's', method: 'bearer', username: 'ann', scopes: [] })).toBe(
      'user:ann',
    );
    expect(actorOf({ subject: 's', method: 'bearer', source: 'idp', scopes: [] })).toBe('token:s');
  });
});

describe('event ids and ranges', () => {
  it('orders ids by time, then sequence, as numbers', () => {
    expect(compareEventIds('9-0', '10-0')).toBe(-1);
    expect(compareEventIds('10-10', '10-9')).toBe(1);
    expect(compareEventIds('10-1', '10-1')).toBe(0);
  });

  it('takes the tightest bound of a cursor, a time and the retention, the exclusive on a tie', () => {
    const bounds = rangeBounds(
      { order: 'desc', count: 10, after: '1000-5', sinceMs: 900, before: '3000-0', untilMs: 2500 },
      500,
    );
    expect(bounds.low).toEqual({ id: '1000-5', inclusive: false });
    expect(bounds.high).toEqual({ id: '2500-18446744073709551615', inclusive: true });
    expect(inBounds('1000-5', bounds)).toBe(false);
    expect(inBounds('1000-6', bounds)).toBe(true);
    expect(inBounds('2500-7', bounds)).toBe(true);
    expect(inBounds('2501-0', bounds)).toBe(false);
    // Past the retention: never read, whatever the cursor says.
    const kept = rangeBounds({ order: 'asc', count: 1, after: '10-0' }, 2000);
    expect(kept.low).toEqual({ id: '2000-0', inclusive: true });
    expect(kept.high).toBeUndefined();
    expect(rangeBounds({ order: 'asc', count: 1, after: '2000-0' }, 2000).low).toEqual({
      id: '2000-0',
      inclusive: false,
    });
  });
});

describe('the audit trail', () => {
  it('stamps the time and host, and hands a failed append to `failed` without rejecting', async () => {
    const appended: AuditEvent[] = [];
    const failed: [AuditEvent, unknown][] = [];
    let fail = false;
    const log: AuditLog = {
      append: (event) => {
        if (fail) return Promise.reject(new Error('down'));
        appended.push(event);
        return Promise.resolve();
      },
      read: () => Promise.resolve([]),
      follow: () => Promise.resolve([]),
    };
    const trail = createAuditTrail(log, {
      host: 'h',
      now: () => Date.parse(EVENT.at),
      failed: (event, error) => failed.push([event, error]),
    });
    const origin = { actor: 'os:root', via: 'cli' };
    await trail.record(origin, { action: 'revoke', subject: 'alice', key: 'k' });
    expect(appended).toEqual([
      { action: 'revoke', subject: 'alice', key: 'k', ...origin, at: EVENT.at, host: 'h' },
    ]);
    fail = true;
    await expect(trail.record(origin, { action: 'create', key: 'k2' })).resolves.toBeUndefined();
    expect(failed).toHaveLength(1);
    expect(failed[0]?.[0]).toMatchObject({ action: 'create', key: 'k2' });
    expect(String(failed[0]?.[1])).toContain('down');
  });
});

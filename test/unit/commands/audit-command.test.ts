import { describe, expect, it } from 'vitest';
import {
  auditLine,
  matches,
  parseAuditOptions,
  type AuditOptions,
} from '../../../src/commands/audit-command.js';
import { CliError } from '../../../src/commands/cli-error.js';
import type { StoredAuditEvent } from '../../../src/credentials/audit-log.js';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const none: AuditOptions = { follow: false };

const event = (fields: Partial<StoredAuditEvent>): StoredAuditEvent => ({
  id: '1795341600000-0',
  at: '2026-11-22T10:00:00.000Z',
  action: 'create',
  actor: 'os:root',
  via: 'cli',
  host: 'ops-1',
  ...fields,
});

/** The exit code a parse fails with. */
function exitOf(options: AuditOptions): number | undefined {
  try {
    parseAuditOptions(options, NOW);
    return undefined;
  } catch (error) {
    return error instanceof CliError ? error.exitCode : -1;
  }
}

describe('keys audit options', () => {
  it('reads the newest 100 of the fleet with nothing asked', () => {
    expect(parseAuditOptions(none, NOW)).toEqual({
      subject: undefined,
      key: undefined,
      actions: undefined,
      sinceMs: undefined,
      untilMs: undefined,
      limit: 100,
      follow: false,
    });
  });

  it('reads durations ago and RFC 3339 times, actions as a set, a limit', () => {
    const query = parseAuditOptions(
      {
        follow: false,
        subject: 'alice',
        action: 'revoke,roll',
        since: '7d',
        until: '2026-11-22T09:00:00+01:00',
        limit: '5',
      },
      NOW,
    );
    expect(query.sinceMs).toBe(NOW - 7 * 86_400_000);
    expect(query.untilMs).toBe(Date.parse('2026-11-22T08:00:00.000Z'));
    expect([...(query.actions ?? [])]).toEqual(['revoke', 'roll']);
    expect(query.limit).toBe(5);
  });

  it('refuses with exit 2 what it cannot read, and --until with --follow', () => {
    for (const bad of [
      { ...none, subject: 'a b' },
      { ...none, key: 'k' },
      { ...none, action: 'create,delete' },
      { ...none, since: 'yesterday' },
      { ...none, until: '2026-11-22' },
      { ...none, limit: '0' },
      { ...none, limit: '100001' },
      { ...none, limit: '1e3' },
      { follow: true, until: '1h' },
    ])
      expect(exitOf(bad), JSON.stringify(bad)).toBe(2);
  });
});

describe('keys audit output', () => {
  it('prints an event as its time, action, then name=value of each field it has', () => {
    const line = auditLine(
      event({ subject: 'alice', key: 'ak_1', scopes: 'accounts:read keys', requestId: undefined }),
    );
    expect(line).toBe(
      '2026-11-22T10:00:00.000Z create      subject=alice key=ak_1 scopes="accounts:read keys" actor=os:root via=cli host=ops-1',
    );
  });

  it('matches on the action, and a key as the pair or a roll’s successor', () => {
    const query = parseAuditOptions({ ...none, key: 'ak_new', action: 'roll' }, NOW);
    expect(matches(query, event({ action: 'roll', key: 'ak_old', successor: 'ak_new' }))).toBe(
      true,
    );
    expect(matches(query, event({ action: 'roll', key: 'ak_other' }))).toBe(false);
    expect(matches(query, event({ action: 'revoke', key: 'ak_new' }))).toBe(false);
  });
});

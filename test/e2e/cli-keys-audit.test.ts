import { Redis } from 'ioredis';
import { hostname, userInfo } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { killCliChildren, runCli, startCli, type CliResult } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';

// Issue 29, point 3, for the CLI: every pair and user change made with the built CLI leaves one
// event in the fleet's stream (and its subject's), read raw from the suite's Redis; `keys audit`
// reads them back with its filters, as text or JSON lines, and follows new ones until a signal.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cliaudit');
const layout = redisLayout(prefix);
const ACTOR = `os:${userInfo().username}`;

let config: string;
let redis: Redis;

beforeAll(() => {
  config = writeConfig(gatewayYaml({ redis: { url: redisUrl, keyPrefix: prefix } }));
  redis = new Redis(redisUrl);
});

afterEach(() => killCliChildren());

afterAll(() => {
  redis?.disconnect();
});

const cli = (args: string[], stdin?: string): Promise<CliResult> =>
  runCli([...args, '--config', config], stdin === undefined ? {} : { stdin });

async function ok(args: string[], stdin?: string): Promise<string> {
  const result = await cli(args, stdin);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return result.stdout;
}

type Raw = Record<string, string>;

async function newest(stream: string): Promise<string> {
  const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
  return last?.[0] ?? '0-0';
}

async function after(stream: string, from: string): Promise<Raw[]> {
  return (await redis.xrange(stream, `(${from}`, '+')).map(([, flat]) => {
    const fields: Raw = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] ?? ''] = flat[i + 1] ?? '';
    return fields;
  });
}

/** Runs the command, then the events it left in the fleet's stream (each also in its subject's). */
async function eventsOf(args: string[], stdin?: string): Promise<{ out: string; events: Raw[] }> {
  const from = await newest(layout.auditEvents);
  const out = await ok(args, stdin);
  const events = await after(layout.auditEvents, from);
  for (const event of events)
    if (event.subject !== undefined) {
      const own = await redis.xrevrange(layout.subjectEvents(event.subject), '+', '-', 'COUNT', 50);
      expect(
        own.some(([, flat]) => flat.join('\n') === Object.entries(event).flat().join('\n')),
      ).toBe(true);
    }
  return { out, events };
}

const BY_CLI = { actor: ACTOR, via: 'cli', host: hostname() };

/** No field holds a secret, a password or any bcrypt hash. */
function expectNoSecret(events: Raw[], ...secrets: string[]): void {
  for (const value of events.flatMap((event) => Object.values(event))) {
    expect(value).not.toMatch(/\$2[aby]\$/);
    for (const secret of secrets) expect(value).not.toContain(secret);
  }
}

describe('the audit trail of the CLI', () => {
  it('records each pair change: create (each of --count), roll, revoke', async () => {
    const made = await eventsOf([
      'keys',
      'create',
      '--subject',
      'cli-a',
      '--expires',
      '30d',
      '--scopes',
      'read',
      '--json',
    ]);
    const pair = JSON.parse(made.out) as { key: string; secret: string; expires_at: string };
    expect(made.events).toEqual([
      {
        at: made.events[0]?.at,
        action: 'create',
        subject: 'cli-a',
        key: pair.key,
        expires_at: pair.expires_at,
        scopes: 'read',
        ...BY_CLI,
      },
    ]);
    expectNoSecret(made.events, pair.secret);

    const bulk = await eventsOf(['keys', 'create', '--subject', 'cli-a', '--count', '3']);
    const keys = bulk.out
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[0]);
    expect(bulk.events.map((e) => e.action)).toEqual(['create', 'create', 'create']);
    expect(bulk.events.map((e) => e.key).sort()).toEqual([...keys].sort());

    const rolled = await eventsOf(['keys', 'roll', pair.key, '--overlap', '0', '--json']);
    const successor = JSON.parse(rolled.out) as {
      key: string;
      secret: string;
      previous: { revoked_at: string };
    };
    expect(rolled.events).toEqual([
      {
        at: rolled.events[0]?.at,
        action: 'roll',
        subject: 'cli-a',
        key: pair.key,
        successor: successor.key,
        expires_at: pair.expires_at,
        ends_at: successor.previous.revoked_at,
        ...BY_CLI,
      },
    ]);
    expectNoSecret(rolled.events, successor.secret, pair.secret);

    const revoked = await eventsOf(['keys', 'revoke', successor.key]);
    expect(revoked.events).toEqual([
      {
        at: revoked.events[0]?.at,
        action: 'revoke',
        subject: 'cli-a',
        key: successor.key,
        ...BY_CLI,
      },
    ]);
  });

  it('records each user change, and each pair a --revoke-keys revokes', async () => {
    const password = 'cli-audit-password-1';
    const added = await eventsOf(
      ['users', 'add', 'cli-ann', '--subject', 'cli-u', '--scopes', 'a,b'],
      `${password}\n`,
    );
    expect(added.events).toEqual([
      {
        at: added.events[0]?.at,
        action: 'user_add',
        subject: 'cli-u',
        scopes: 'a b',
        username: 'cli-ann',
        ...BY_CLI,
      },
    ]);
    const changed = await eventsOf(['users', 'passwd', 'cli-ann'], 'another-password-2\n');
    expect(changed.events).toMatchObject([
      { action: 'user_passwd', subject: 'cli-u', username: 'cli-ann' },
    ]);
    const pair = JSON.parse(await ok(['keys', 'create', '--subject', 'cli-u', '--json'])) as {
      key: string;
    };
    const removed = await eventsOf(['users', 'remove', 'cli-ann', '--revoke-keys']);
    expect(removed.events.map((e) => [e.action, e.username ?? e.key])).toEqual([
      ['user_remove', 'cli-ann'],
      ['revoke', pair.key],
    ]);
    expectNoSecret(
      [...added.events, ...changed.events, ...removed.events],
      password,
      'another-password-2',
    );
  });

  it('records each unlock asked, with the subject of a known key', async () => {
    const pair = JSON.parse(await ok(['keys', 'create', '--subject', 'cli-l', '--json'])) as {
      key: string;
    };
    const unlocked = await eventsOf([
      'keys',
      'unlock',
      '--key',
      pair.key,
      '--address',
      '2001:db8::7',
    ]);
    expect(unlocked.events).toEqual([
      { at: unlocked.events[0]?.at, action: 'unlock', subject: 'cli-l', key: pair.key, ...BY_CLI },
      { at: unlocked.events[1]?.at, action: 'unlock', network: '2001:db8::/64', ...BY_CLI },
    ]);
  });
});

describe('keys audit', () => {
  it('prints the newest events that match, oldest first, as text or JSON lines', async () => {
    const a = JSON.parse(await ok(['keys', 'create', '--subject', 'cli-r', '--json'])) as {
      key: string;
    };
    const b = JSON.parse(await ok(['keys', 'create', '--subject', 'cli-r', '--json'])) as {
      key: string;
    };
    await ok(['keys', 'revoke', a.key]);

    const text = await ok(['keys', 'audit', '--subject', 'cli-r']);
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z create {6}subject=cli-r key=${a.key} actor=${ACTOR} via=cli host=\\S+$`,
      ),
    );
    expect(lines[2]).toContain(`revoke      subject=cli-r key=${a.key}`);

    const json = (await ok(['keys', 'audit', '--subject', 'cli-r', '--json']))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Raw);
    expect(json.map((e) => [e.action, e.key])).toEqual([
      ['create', a.key],
      ['create', b.key],
      ['revoke', a.key],
    ]);
    expect(json[0]).toMatchObject({ subject: 'cli-r', actor: ACTOR, via: 'cli' });
    expect(json[0]?.id).toMatch(/^\d+-\d+$/);

    const only = async (...args: string[]) =>
      (await ok(['keys', 'audit', '--json', ...args]))
        .trim()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as Raw).key);
    expect(await only('--key', a.key)).toEqual([a.key, a.key]);
    expect(await only('--subject', 'cli-r', '--action', 'revoke')).toEqual([a.key]);
    expect(await only('--subject', 'cli-r', '--limit', '1')).toEqual([a.key]);
    expect(await only('--subject', 'cli-r', '--limit', '2')).toEqual([b.key, a.key]);
    expect(await only('--subject', 'cli-r', '--until', '2000-01-01T00:00:00Z')).toEqual([]);
    expect(await only('--subject', 'cli-r', '--since', '1h')).toHaveLength(3);
    // The fleet's stream: every subject's events, these among them.
    expect(await only('--action', 'revoke', '--limit', '1000')).toContain(a.key);
  });

  it('refuses options it cannot read with exit 2', async () => {
    for (const args of [
      ['--action', 'delete'],
      ['--since', 'soon'],
      ['--limit', '0'],
      ['--follow', '--until', '1h'],
    ]) {
      const result = await cli(['keys', 'audit', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/^accounts-gateway: --/);
    }
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    'follows new events as they come, and ends with exit 0 on %s',
    async (signal) => {
      const subject = `cli-f-${signal}`;
      const first = JSON.parse(await ok(['keys', 'create', '--subject', subject, '--json'])) as {
        key: string;
      };
      const follow = startCli([
        'keys',
        'audit',
        '--subject',
        subject,
        '--follow',
        '--json',
        '--config',
        config,
      ]);
      expect((await follow.untilLines(1)).map((line) => (JSON.parse(line) as Raw).key)).toEqual([
        first.key,
      ]);
      const second = JSON.parse(await ok(['keys', 'create', '--subject', subject, '--json'])) as {
        key: string;
      };
      await ok(['keys', 'revoke', second.key]);
      const lines = await follow.untilLines(3);
      expect(
        lines.map((line) => {
          const event = JSON.parse(line) as Raw;
          return [event.action, event.key];
        }),
      ).toEqual([
        ['create', first.key],
        ['create', second.key],
        ['revoke', second.key],
      ]);
      process.kill(follow.pid, signal);
      const ended = await follow.exited;
      expect(ended.code).toBe(0);
      expect(ended.stderr).toBe('');
    },
  );
});

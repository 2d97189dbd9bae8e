import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CredentialStore, KeyRecord } from '../../src/credentials/credential-store.js';
import { EXPIRING_MESSAGE } from '../../src/commands/expiring-keys-command.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { HASH } from '../support/credential-store-contract.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';

// `keys list --expiring` (issue 29, point 4) end to end: the built CLI against a real Redis,
// every subject's pairs ending within the duration (a walk over the store's prefix), or one
// subject's, the soonest first. Exit codes: 0 ok, 2 usage.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cliexpiring');
const DAY_MS = 86_400_000;

let config: string;
let store: CredentialStore;
/** The pairs as written, by name; their ends count from the start of the file. */
const pairs: Record<string, KeyRecord> = {};

beforeAll(async () => {
  config = writeConfig(gatewayYaml({ redis: { url: redisUrl, keyPrefix: prefix } }));
  store = openRedisStore(redisConfig(redisUrl, prefix));
  const startMs = Date.now();
  const pair = (key: string, subject: string, days?: number, label = ''): KeyRecord => ({
    key,
    subject,
    secretHash: HASH,
    label,
    status: 'active',
    createdAt: new Date(startMs - DAY_MS).toISOString(),
    scopes: subject === 'exp-b' ? ['read', 'keys'] : [],
    ...(days === undefined ? {} : { expiresAt: new Date(startMs + days * DAY_MS).toISOString() }),
  });
  Object.assign(pairs, {
    week: pair('ak_exp_week', 'exp-a', 3.5, 'build box'),
    tenDays: pair('ak_exp_ten', 'exp-b', 10.5),
    month: pair('ak_exp_month', 'exp-a', 20.5),
    later: pair('ak_exp_later', 'exp-a', 60),
    never: pair('ak_exp_never', 'exp-a'),
    revoked: pair('ak_exp_revoked', 'exp-b', 5),
  });
  for (const record of Object.values(pairs))
    expect(await store.createKey(record, 10), record.key).toBe(true);
  await store.revokeKey('ak_exp_revoked', new Date(startMs).toISOString());
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await store?.close();
});

const cli = (args: string[]) => runCli([...args, '--config', config]);

describe('keys list --expiring', () => {
  it("lists every subject's active pairs ending within the duration, the soonest first", async () => {
    const result = await cli(['keys', 'list', '--expiring', '30d']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const line = (r: KeyRecord, days: number, scopes: string) =>
      `${r.key}  expires ${r.expiresAt ?? ''}  in ${String(days)}d  subject ${r.subject}  scopes ${scopes}  ${r.label}`.trimEnd();
    const { week, tenDays, month } = pairs;
    if (week === undefined || tenDays === undefined || month === undefined) throw new Error();
    expect(result.stdout).toBe(
      `${[line(week, 3, '-'), line(tenDays, 10, 'read,keys'), line(month, 20, '-')].join('\n')}\n`,
    );
  });

  it('prints each one as GET /keys shows it, with its subject, with --json', async () => {
    const result = await cli(['keys', 'list', '--expiring', '7d', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([
      {
        id: 'ak_exp_week',
        key: 'ak_exp_week',
        subject: 'exp-a',
        label: 'build box',
        status: 'active',
        created_at: pairs.week?.createdAt,
        expires_at: pairs.week?.expiresAt,
        scopes: [],
        last_used_at: null,
        expiring_soon: true,
      },
    ]);
    expect(result.stdout).not.toMatch(/secret|hash|\$2[aby]\$/);
  });

  it("lists one subject's only with --subject, and says when there is none", async () => {
    const a = await cli(['keys', 'list', '--subject', 'exp-a', '--expiring', '30d', '--json']);
    expect(a.code, a.stderr).toBe(0);
    expect((JSON.parse(a.stdout) as { key: string }[]).map((view) => view.key)).toEqual([
      'ak_exp_week',
      'ak_exp_month',
    ]);
    expect(await cli(['keys', 'list', '--subject', 'exp-b', '--expiring', '10d'])).toEqual({
      code: 0,
      stdout: 'no pairs of exp-b ending within 10d\n',
      stderr: '',
    });
    expect(await cli(['keys', 'list', '--expiring', '1h', '--json'])).toEqual({
      code: 0,
      stdout: '[]\n',
      stderr: '',
    });
  });

  it('refuses a duration it cannot read, and a listing with neither --subject nor --expiring, with exit 2', async () => {
    for (const expiring of ['5w', '0d', '3651d', 'soon'])
      expect(await cli(['keys', 'list', '--expiring', expiring]), expiring).toEqual({
        code: 2,
        stdout: '',
        stderr: `accounts-gateway: ${EXPIRING_MESSAGE}\n`,
      });
    expect(await cli(['keys', 'list'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'accounts-gateway: keys list needs --subject, or --expiring (every subject)\n',
    });
  });
});

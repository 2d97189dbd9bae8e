import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { ROLL_MESSAGES } from '../../src/credentials/key-roll.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { expectKeyIdOf } from '../support/key-ids.js';
import { pollStatus } from '../support/poll-status.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';
import { send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// `keys roll` end to end: the built CLI against a real Redis, the pairs it leaves checked in
// the store and at a running gateway. Exit codes: 0 ok, 2 usage, 3 not found, 4 conflict.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cliroll');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let config: string;
let store: CredentialStore;
let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  config = writeConfig(gatewayYaml({ redis: { url: redisUrl, keyPrefix: prefix } }));
  store = openRedisStore(redisConfig(redisUrl, prefix));
  upstream = await startEchoUpstream();
  gateway = await startGateway(
    gatewayYaml({ upstreamUrl: upstream.url, redis: { url: redisUrl, keyPrefix: prefix } }),
  );
  await untilSubscribers(redisUrl, prefix, 1);
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
  await store?.close();
});

const cli = (args: string[]) => runCli([...args, '--config', config]);

interface Made {
  key: string;
  secret: string;
}

async function create(subject: string, ...extra: string[]): Promise<Made> {
  const made = await cli(['keys', 'create', '--subject', subject, '--json', ...extra]);
  expect(made.code, made.stderr).toBe(0);
  return JSON.parse(made.stdout) as Made;
}

const status = async (pair: Made): Promise<number> =>
  (
    await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    })
  ).status;

describe('keys roll', () => {
  it('prints the new pair with its secret once and when the old one ends; both work during the overlap', async () => {
    const old = await create('subject-roll-1', '--label', 'laptop', '--scopes', 'read');
    const before = Date.now();

    const result = await cli(['keys', 'roll', old.key, '--overlap', '30m']);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const match =
      /^key: {4}(\S+)\nsecret: ([0-9A-Za-z]{48})\nrolled: (\S+) \(ends (\S+)\)\n\(the secret is shown this once\)\n$/.exec(
        result.stdout,
      );
    expect(match, result.stdout).not.toBeNull();
    const [, key = '', secret = '', rolled = '', ends = ''] = match ?? [];
    expectKeyIdOf(key, 'subject-roll-1');
    expect(rolled).toBe(old.key);
    expect(Date.parse(ends)).toBeGreaterThanOrEqual(before + 1_800_000);
    expect(Date.parse(ends)).toBeLessThanOrEqual(Date.now() + 1_800_000);
    expect(await store.getKey(key)).toMatchObject({
      subject: 'subject-roll-1',
      label: 'laptop',
      scopes: ['read'],
      status: 'active',
    });
    expect(await store.getKey(old.key)).toMatchObject({ status: 'active', expiresAt: ends });
    expect(await status({ key, secret })).toBe(200);
    expect(await status(old)).toBe(200);
  });

  it('revokes the old pair at once with --overlap 0: every gateway refuses it', async () => {
    const old = await create('subject-roll-2');
    expect(await status(old)).toBe(200);

    const result = await cli(['keys', 'roll', old.key, '--overlap', '0']);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`\nrolled: ${old.key} (revoked now)\n`);
    expect(await store.getKey(old.key)).toMatchObject({ status: 'revoked' });
    // Cached at the gateway before the roll: refused once the announcement has reached it.
    await pollStatus(
      () =>
        fetch(`${gateway.url}/accounts`, {
          headers: { authorization: basicHeader(old.key, old.secret) },
        }),
      401,
    );
  });

  it('prints the new pair and, as previous, the old one with --json; an hour’s overlap by default', async () => {
    const old = await create('subject-roll-3', '--expires', '90d');
    const before = Date.now();

    const result = await cli(['keys', 'roll', old.key, '--json']);

    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as Record<string, unknown> & {
      key: string;
      previous: { expires_at: string };
    };
    const stored = await store.getKey(old.key);
    expect(printed).toEqual({
      id: printed.key,
      key: expect.any(String) as unknown,
      secret: expect.stringMatching(/^[0-9A-Za-z]{48}$/) as unknown,
      label: '',
      status: 'active',
      subject: 'subject-roll-3',
      created_at: expect.stringMatching(ISO) as unknown,
      expires_at: (await store.getKey(printed.key))?.expiresAt,
      scopes: [],
      last_used_at: null,
      expiring_soon: false,
      previous: {
        id: old.key,
        key: old.key,
        label: '',
        status: 'active',
        created_at: stored?.createdAt,
        expires_at: stored?.expiresAt,
        scopes: [],
        last_used_at: null,
        expiring_soon: true,
      },
    });
    expect(Date.parse(printed.previous.expires_at)).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(Date.parse(printed.previous.expires_at)).toBeLessThanOrEqual(Date.now() + 3_600_000);
  });

  it('refuses an --overlap over 24 hours, or that is no duration, with exit 2', async () => {
    for (const overlap of ['25h', '1.5h', 'soon', '-1h'])
      expect(await cli(['keys', 'roll', 'ak_whatever_pair', `--overlap=${overlap}`])).toEqual({
        code: 2,
        stdout: '',
        stderr: `accounts-gateway: ${ROLL_MESSAGES.option}\n`,
      });
  });

  it('answers an unknown pair with exit 3 and a revoked one with exit 4', async () => {
    expect(await cli(['keys', 'roll', 'ak_thereisnosuchkey000000'])).toEqual({
      code: 3,
      stdout: '',
      stderr: 'accounts-gateway: no pair ak_thereisnosuchkey000000\n',
    });
    const old = await create('subject-roll-4');
    expect((await cli(['keys', 'revoke', old.key])).code).toBe(0);
    expect(await cli(['keys', 'roll', old.key])).toEqual({
      code: 4,
      stdout: '',
      stderr: `accounts-gateway: ${ROLL_MESSAGES.ended}\n`,
    });
  });
});

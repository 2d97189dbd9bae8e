import bcrypt from 'bcrypt';
import { decodeJwt } from 'jose';
import { EXPIRY_MESSAGES } from '../../src/credentials/key-expiry.js';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { openRedisStore } from '../support/redis-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { expectKeyIdOf } from '../support/key-ids.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import { redisConfig } from '../support/redis-config.js';
import { freePort } from '../support/redis-server.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import {
  seedKey,
  TEST_BCRYPT_COST,
  uniquePrefix,
  uniqueSingleSlotPrefix,
} from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// The admin CLI (issue 3, part 3) end to end: the built `accounts-gateway keys|users`
// against a real Redis, checked through the store and through a running gateway.
// Exit codes (src/commands/cli-error.ts): 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cliadmin');
const MAX_ACTIVE = 2;

/** A config naming the memory store: the admin commands need --redis-url with it. */
let memoryConfig: string;
/** A config naming the Redis store: no flag needed. */
let redisFileConfig: string;
let store: CredentialStore;
let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  const keys = { maxActivePerSubject: MAX_ACTIVE };
  memoryConfig = writeConfig(
    gatewayYaml({ config: { credentials: { redis: { keyPrefix: prefix } }, keys } }),
  );
  redisFileConfig = writeConfig(
    gatewayYaml({ redis: { url: redisUrl, keyPrefix: prefix }, config: { keys } }),
  );
  store = openRedisStore(redisConfig(redisUrl, prefix));
  upstream = await startEchoUpstream();
  const signing = await generateSigningKey();
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      signingKeyPem: signing.pem,
      config: { logging: { level: 'info', requests: false } },
    }),
  );
  await untilSubscribers(redisUrl, prefix, 1);
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
  await store?.close();
});

/** The CLI against the test Redis: a memory-store config turned to Redis by --redis-url. */
const cli = (args: string[], stdin?: string) =>
  runCli(
    [...args, '--config', memoryConfig, '--redis-url', redisUrl],
    stdin === undefined ? {} : { stdin },
  );

const exchange = (username: string, password: string) =>
  send(gateway.url, '/auth/token', {
    method: 'POST',
    headers: JSON_TYPE,
    body: JSON.stringify({ username, password }),
  });

const NO_STACK = /\n\s+at /;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const basic = (key: string, secret: string) => ({ authorization: basicHeader(key, secret) });

describe('users add | passwd | remove', () => {
  it('adds a user with the password read from stdin, and refuses to add it twice (exit 4)', async () => {
    const added = await cli(
      ['users', 'add', 'alice', '--subject', 'subject-alice'],
      'alice-password-1\n',
    );
    expect(added).toEqual({ code: 0, stdout: 'added alice (subject subject-alice)\n', stderr: '' });
    const user = await store.getUser('alice');
    expect(user).toMatchObject({ username: 'alice', subject: 'subject-alice' });
    expect(await bcrypt.compare('alice-password-1', user?.passwordHash ?? '')).toBe(true);
    expect(user?.passwordHash).not.toContain('alice-password-1');

    const again = await cli(
      ['users', 'add', 'alice', '--subject', 'subject-alice'],
      'another-password\n',
    );
    expect(again.code).toBe(4);
    expect(again.stdout).toBe('');
    expect(again.stderr).toBe('accounts-gateway: user alice exists; use users passwd\n');
    // The first password still stands.
    expect(
      await bcrypt.compare('alice-password-1', (await store.getUser('alice'))?.passwordHash ?? ''),
    ).toBe(true);
  });

  it('changes a password with users passwd: the old one fails and the new one works at the gateway', async () => {
    await cli(['users', 'add', 'carol', '--subject', 'subject-carol'], 'carol-old-pass\n');
    expect((await exchange('carol', 'carol-old-pass')).status).toBe(200);
    const changed = await cli(['users', 'passwd', 'carol'], 'carol-new-pass\n');
    expect(changed).toEqual({ code: 0, stdout: 'changed the password of carol\n', stderr: '' });
    expect((await exchange('carol', 'carol-old-pass')).status).toBe(401);
    expect((await exchange('carol', 'carol-new-pass')).status).toBe(200);
    expect((await store.getUser('carol'))?.subject).toBe('subject-carol');
  });

  it('answers users passwd for an unknown user with exit 3', async () => {
    const result = await cli(['users', 'passwd', 'nobody-here'], 'some-password-1\n');
    expect(result).toEqual({
      code: 3,
      stdout: '',
      stderr: 'accounts-gateway: no user nobody-here\n',
    });
  });

  it('removes a user (exit 0), then answers a second removal with exit 3', async () => {
    await cli(['users', 'add', 'dave', '--subject', 'subject-dave'], 'dave-password-1\n');
    const removed = await cli(['users', 'remove', 'dave']);
    expect(removed).toEqual({
      code: 0,
      stdout: 'removed dave; subject subject-dave keeps 0 active pairs\n',
      stderr: '',
    });
    expect(await store.getUser('dave')).toBeUndefined();
    expect((await exchange('dave', 'dave-password-1')).status).toBe(401);
    const again = await cli(['users', 'remove', 'dave']);
    expect(again).toEqual({ code: 3, stdout: '', stderr: 'accounts-gateway: no user dave\n' });
  });

  it("says how many active pairs the user's subject keeps, which --revoke-keys revokes on every gateway", async () => {
    // The users and pairs are made through the store (users add and keys create have tests of
    // their own): each CLI run is a cold start of dist/, seconds on a loaded machine.
    const addUser = async (username: string, subject: string) =>
      expect(
        await store.addUser({
          username,
          subject,
          passwordHash: await bcrypt.hash(`${username}-password-1`, TEST_BCRYPT_COST),
          createdAt: new Date().toISOString(),
          scopes: [],
        }),
      ).toBe(true);
    const made = async (subject: string, n: number) => {
      const pair = {
        key: `ak_${subject.replace('-', '_')}_${n}`,
        secret: `secret-${n}-0123456789`,
        subject,
      };
      await seedKey(redisUrl, prefix, pair);
      return pair;
    };
    await addUser('ida', 'subject-ida');
    await made('subject-ida', 1);
    await made('subject-ida', 2);
    expect(await cli(['users', 'remove', 'ida'])).toEqual({
      code: 0,
      stdout:
        'removed ida; subject subject-ida keeps 2 active pairs (pairs belong to the subject; users remove --revoke-keys revokes them)\n',
      stderr: '',
    });

    await addUser('jo', 'subject-jo');
    const pairs = [await made('subject-jo', 1), await made('subject-jo', 2)];
    // Verified once each, so the gateway has them cached.
    for (const pair of pairs)
      expect(
        (await send(gateway.url, '/accounts', { headers: basic(pair.key, pair.secret) })).status,
      ).toBe(200);
    const removed = await cli(['users', 'remove', 'jo', '--revoke-keys', '--json']);
    expect(removed.code).toBe(0);
    const answer = JSON.parse(removed.stdout) as { revoked_keys: string[] };
    expect({ ...answer, revoked_keys: [...answer.revoked_keys].sort() }).toEqual({
      username: 'jo',
      removed: true,
      subject: 'subject-jo',
      revoked_keys: pairs.map((p) => p.key).sort(),
      active_keys: 0,
    });
    // Each revocation was announced: the gateway refuses the cached pairs at once.
    for (const pair of pairs)
      expect(
        (await send(gateway.url, '/accounts', { headers: basic(pair.key, pair.secret) })).status,
      ).toBe(401);
    await expect(store.countActiveKeys('subject-jo')).resolves.toBe(0);
  });

  it('says in words what --revoke-keys revoked', async () => {
    await cli(['users', 'add', 'kim', '--subject', 'subject-kim'], 'kim-password-1\n');
    await cli(['keys', 'create', '--subject', 'subject-kim']);
    expect(await cli(['users', 'remove', 'kim', '--revoke-keys'])).toEqual({
      code: 0,
      stdout:
        'removed kim; revoked 1 pair of subject subject-kim (every active pair of the subject, whichever user made it); 0 active pairs left\n',
      stderr: '',
    });
  });

  it('accepts no password on argv: --password is an unknown argument (exit 2)', async () => {
    const result = await cli([
      'users',
      'add',
      'bob',
      '--subject',
      'subject-bob',
      '--password',
      'x-password-1',
    ]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/Unknown argument.*password/i);
    expect(result.stderr).not.toMatch(NO_STACK);
    expect(await store.getUser('bob')).toBeUndefined();
  });

  it('refuses a password shorter than 8 characters with exit 2', async () => {
    const result = await cli(['users', 'add', 'erin', '--subject', 'subject-erin'], 'short\n');
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'accounts-gateway: the password must have at least 8 characters\n',
    });
    expect(await store.getUser('erin')).toBeUndefined();
  });

  it("adds a user with --scopes, which the user's tokens then carry", async () => {
    const result = await cli(
      ['users', 'add', 'gina', '--subject', 'subject-gina', '--scopes', 'accounts:read,keys'],
      'gina-password-1\n',
    );
    expect(result).toEqual({
      code: 0,
      stdout: 'added gina (subject subject-gina, scopes accounts:read keys)\n',
      stderr: '',
    });
    await expect(store.getUser('gina')).resolves.toMatchObject({
      scopes: ['accounts:read', 'keys'],
    });
    const token = await issueToken(gateway.url, 'gina', 'gina-password-1');
    expect(decodeJwt(token).scope).toBe('accounts:read keys');
  });

  it('lists every user by name, also those still in the single-slot layout, never a password hash, in text and with --json', async () => {
    const keyPrefix = uniquePrefix('cliusers');
    const singleSlotPrefix = uniqueSingleSlotPrefix('cliusers');
    const config = writeConfig(
      gatewayYaml({ config: { credentials: { redis: { keyPrefix, singleSlotPrefix } } } }),
    );
    const users = (args: string[], stdin?: string) =>
      runCli(['users', ...args, '--config', config, '--redis-url', redisUrl], {
        ...(stdin === undefined ? {} : { stdin }),
      });
    expect(await users(['list'])).toEqual({ code: 0, stdout: 'no users\n', stderr: '' });
    // Added through a store of this layout (users add has tests of its own): each CLI run is
    // a cold start of dist/, seconds on a loaded machine.
    const layoutStore = openRedisStore(redisConfig(redisUrl, keyPrefix, singleSlotPrefix));
    try {
      for (const [username, subject, scopes] of [
        ['bob', 'sub-bob', []],
        ['alice', 'sub-a', ['read', 'write']],
      ] as const)
        expect(
          await layoutStore.addUser({
            username,
            subject,
            passwordHash: await bcrypt.hash(`password-${username}`, TEST_BCRYPT_COST),
            createdAt: new Date().toISOString(),
            scopes,
          }),
        ).toBe(true);
    } finally {
      await layoutStore.close();
    }
    const redis = new Redis(redisUrl);
    try {
      await redis.hset(`${singleSlotPrefix}user:carol`, {
        password_hash: await bcrypt.hash('password-c', 4),
        subject: 'sub-c',
        created_at: '2026-01-02T03:04:05.000Z',
        scopes: '',
      });
    } finally {
      redis.disconnect();
    }
    const human = await users(['list']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      /^alice {2}sub-a {2}\S+Z {2}scopes read,write\nbob {2}sub-bob {2}\S+Z {2}scopes -\ncarol {2}sub-c {2}2026-01-02T03:04:05\.000Z {2}scopes -\n$/,
    );
    const json = await users(['list', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        username: 'alice',
        subject: 'sub-a',
        created_at: expect.stringMatching(ISO) as unknown,
        scopes: ['read', 'write'],
      },
      {
        username: 'bob',
        subject: 'sub-bob',
        created_at: expect.stringMatching(ISO) as unknown,
        scopes: [],
      },
      { username: 'carol', subject: 'sub-c', created_at: '2026-01-02T03:04:05.000Z', scopes: [] },
    ]);
    expect(human.stdout + json.stdout).not.toMatch(/hash|\$2[aby]\$/);
  });

  it('prints JSON with --json', async () => {
    const result = await cli(
      ['users', 'add', 'frank', '--subject', 'subject-frank', '--json'],
      'frank-password-1\n',
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      username: 'frank',
      subject: 'subject-frank',
      scopes: [],
    });
  });
});

describe('keys create | list | revoke', () => {
  it('prints the new key and its secret once, in human form, and the pair works at the gateway', async () => {
    const result = await cli([
      'keys',
      'create',
      '--subject',
      'subject-keys-1',
      '--label',
      'laptop',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const match =
      /^key: {4}(\S+)\nsecret: ([0-9A-Za-z]{40,72})\n\(the secret is shown this once\)\n$/.exec(
        result.stdout,
      );
    expect(match, result.stdout).not.toBeNull();
    const [, key = '', secret = ''] = match ?? [];
    expectKeyIdOf(key, 'subject-keys-1');
    expect(await store.getKey(key)).toMatchObject({
      subject: 'subject-keys-1',
      label: 'laptop',
      status: 'active',
    });
    const res = await send(gateway.url, '/accounts', { headers: basic(key, secret) });
    expect(res.status).toBe(200);
  });

  it('prints parseable JSON with key, secret and label with --json', async () => {
    const result = await cli([
      'keys',
      'create',
      '--subject',
      'subject-keys-2',
      '--label',
      'L',
      '--json',
    ]);
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout) as Record<string, string>;
    expect(created).toEqual({
      id: created.key,
      key: expect.any(String) as unknown,
      secret: expect.stringMatching(/^[0-9A-Za-z]{40,72}$/) as unknown,
      label: 'L',
      status: 'active',
      subject: 'subject-keys-2',
      created_at: expect.stringMatching(ISO) as unknown,
      expires_at: null,
      scopes: [],
      last_used_at: null,
      expiring_soon: false,
    });
    expectKeyIdOf(created.key, 'subject-keys-2');
    const stored = await store.getKey(created.key ?? '');
    expect(await bcrypt.compare(created.secret ?? '', stored?.secretHash ?? '')).toBe(true);
  });

  it('makes a pair that expires with --expires, a duration or an RFC 3339 time', async () => {
    const before = Date.now();
    const inDays = await cli([
      'keys',
      'create',
      '--subject',
      'subject-keys-exp',
      '--expires',
      '90d',
      '--json',
    ]);
    const after = Date.now();
    expect(inDays.code).toBe(0);
    const created = JSON.parse(inDays.stdout) as { key: string; expires_at: string };
    // 90 days from a moment the command ran, whenever that was: from `before` to `after`.
    const expiresAt = Date.parse(created.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 90 * 86_400_000);
    expect(expiresAt).toBeLessThanOrEqual(after + 90 * 86_400_000);
    await expect(store.getKey(created.key)).resolves.toMatchObject({
      expiresAt: created.expires_at,
    });
    const at = await cli([
      'keys',
      'create',
      '--subject',
      'subject-keys-exp',
      '--expires',
      '2035-01-31T13:00:00+01:00',
      '--json',
    ]);
    expect(JSON.parse(at.stdout)).toMatchObject({ expires_at: '2035-01-31T12:00:00.000Z' });
  });

  it('makes a pair with --scopes, and refuses scopes that are not scope tokens (exit 2)', async () => {
    const made = await cli([
      'keys',
      'create',
      '--subject',
      'subject-keys-scoped',
      '--scopes',
      'accounts:read,keys',
      '--json',
    ]);
    expect(made.code).toBe(0);
    const created = JSON.parse(made.stdout) as { key: string; scopes: string[] };
    expect(created.scopes).toEqual(['accounts:read', 'keys']);
    await expect(store.getKey(created.key)).resolves.toMatchObject({
      scopes: ['accounts:read', 'keys'],
    });
    for (const scopes of ['a b', 'a,a', 'a,'])
      expect(
        await cli(['keys', 'create', '--subject', 'subject-keys-scoped', '--scopes', scopes]),
      ).toMatchObject({
        code: 2,
        stdout: '',
      });
  });

  it('refuses an --expires it cannot read, or in the past, with exit 2 and no pair', async () => {
    for (const expires of ['5w', '2001-01-01T00:00:00Z']) {
      expect(
        await cli(['keys', 'create', '--subject', 'subject-keys-badexp', '--expires', expires]),
      ).toEqual({
        code: 2,
        stdout: '',
        stderr: `accounts-gateway: ${EXPIRY_MESSAGES.option}\n`,
      });
    }
    await expect(store.listKeys('subject-keys-badexp')).resolves.toEqual([]);
  });

  it('lists a subject’s pairs without their secrets, in human form and with --json', async () => {
    const created = JSON.parse(
      (await cli(['keys', 'create', '--subject', 'subject-keys-3', '--label', 'listed', '--json']))
        .stdout,
    ) as { key: string; secret: string };
    const human = await cli(['keys', 'list', '--subject', 'subject-keys-3']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(`^${created.key} {2}active {3}\\S+ {2}expires never {2}scopes - {2}listed\\n$`),
    );
    expect(human.stdout).not.toContain(created.secret);
    const json = await cli(['keys', 'list', '--subject', 'subject-keys-3', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        id: created.key,
        key: created.key,
        label: 'listed',
        status: 'active',
        created_at: expect.stringMatching(ISO) as unknown,
        expires_at: null,
        scopes: [],
        last_used_at: null,
        expiring_soon: false,
      },
    ]);
    expect(json.stdout).not.toContain(created.secret);
    expect(json.stdout).not.toMatch(/secret|hash|\$2[aby]\$/);
  });

  it('lists every pair of a subject, past the 1,000 of one page', async () => {
    const k = redisLayout(prefix);
    const redis = new Redis(redisUrl);
    const count = 1_005;
    try {
      const batch = redis.pipeline();
      for (let i = 0; i < count; i += 1) {
        const key = `ak_listed_${String(i).padStart(4, '0')}`;
        const created = Date.parse('2026-01-01T00:00:00.000Z') + i * 1000;
        batch
          .hset(k.key(key, 'subject-many'), {
            secret_hash: '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq',
            subject: 'subject-many',
            label: '',
            status: 'revoked',
            created_at: new Date(created).toISOString(),
            revoked_at: new Date().toISOString(),
          })
          .zadd(k.subjectPairs('subject-many'), created, key);
      }
      await batch.exec();
    } finally {
      redis.disconnect();
    }
    const listed = await cli(['keys', 'list', '--subject', 'subject-many', '--json']);
    expect(listed.code).toBe(0);
    const keys = (JSON.parse(listed.stdout) as { key: string }[]).map((v) => v.key);
    expect(keys).toHaveLength(count);
    expect(keys[0]).toBe('ak_listed_1004');
    expect(keys.at(-1)).toBe('ak_listed_0000');
    expect(new Set(keys).size).toBe(count);
  });

  it('shows the expiry and the scopes of each pair in the text listing', async () => {
    const created = JSON.parse(
      (
        await cli([
          'keys',
          'create',
          '--subject',
          'subject-show-1',
          '--label',
          'two words',
          '--expires',
          '2035-01-02T03:04:05Z',
          '--scopes',
          'read,write',
          '--json',
        ])
      ).stdout,
    ) as { key: string };
    const human = await cli(['keys', 'list', '--subject', 'subject-show-1']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(
        `^${created.key} {2}active {3}\\S+ {2}expires 2035-01-02T03:04:05\\.000Z {2}scopes read,write {2}two words\\n$`,
      ),
    );
  });

  it('shows one pair with its subject, expiry and scopes, never its secret or hash, in text and with --json', async () => {
    const created = JSON.parse(
      (
        await cli([
          'keys',
          'create',
          '--subject',
          'subject-show-2',
          '--label',
          'shown',
          '--expires',
          '2035-01-02T03:04:05Z',
          '--scopes',
          'read',
          '--json',
        ])
      ).stdout,
    ) as { key: string; secret: string; created_at: string };
    const human = await cli(['keys', 'show', created.key]);
    expect(human).toEqual({
      code: 0,
      stdout: [
        `key:       ${created.key}`,
        'subject:   subject-show-2',
        'status:    active',
        `created:   ${created.created_at}`,
        'expires:   2035-01-02T03:04:05.000Z',
        'scopes:    read',
        'last used: never',
        'label:     shown',
        '',
      ].join('\n'),
      stderr: '',
    });
    const json = await cli(['keys', 'show', created.key, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      id: created.key,
      key: created.key,
      subject: 'subject-show-2',
      label: 'shown',
      status: 'active',
      created_at: created.created_at,
      expires_at: '2035-01-02T03:04:05.000Z',
      scopes: ['read'],
      last_used_at: null,
      expiring_soon: false,
    });
    for (const output of [human.stdout, json.stdout]) {
      expect(output).not.toContain(created.secret);
      expect(output).not.toMatch(/secret|hash|\$2[aby]\$/);
    }
  });

  it('shows a revoked pair with its revocation time', async () => {
    const created = JSON.parse(
      (await cli(['keys', 'create', '--subject', 'subject-show-3', '--json'])).stdout,
    ) as { key: string };
    await cli(['keys', 'revoke', created.key]);
    const human = await cli(['keys', 'show', created.key]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^status: {4}revoked$/m);
    expect(human.stdout).toMatch(/^revoked: {3}\S+Z$/m);
  });

  it('answers keys show of an unknown key with exit 3 and a sentence', async () => {
    expect(await cli(['keys', 'show', 'ak_thereisnosuchkey000000'])).toEqual({
      code: 3,
      stdout: '',
      stderr: 'accounts-gateway: no pair ak_thereisnosuchkey000000\n',
    });
  });

  it('says so when a subject has no pairs', async () => {
    expect(await cli(['keys', 'list', '--subject', 'subject-without-pairs'])).toEqual({
      code: 0,
      stdout: 'no pairs for subject-without-pairs\n',
      stderr: '',
    });
  });

  it('revokes a pair (exit 0): revoked in the store and refused by the gateway', async () => {
    const created = JSON.parse(
      (await cli(['keys', 'create', '--subject', 'subject-keys-4', '--json'])).stdout,
    ) as { key: string; secret: string };
    expect(
      (await send(gateway.url, '/accounts', { headers: basic(created.key, created.secret) }))
        .status,
    ).toBe(200);
    const revoked = await cli(['keys', 'revoke', created.key]);
    expect(revoked).toEqual({ code: 0, stdout: `revoked ${created.key}\n`, stderr: '' });
    expect(await store.getKey(created.key)).toMatchObject({ status: 'revoked' });
    // The gateway's cache was told at once: no polling needed beyond the CLI's own exit.
    expect(
      (await send(gateway.url, '/accounts', { headers: basic(created.key, created.secret) }))
        .status,
    ).toBe(401);
    const listed = await cli(['keys', 'list', '--subject', 'subject-keys-4']);
    expect(listed.stdout).toMatch(new RegExp(`^${created.key} {2}revoked `));
  });

  it('answers the revocation of an unknown key with exit 3', async () => {
    const result = await cli(['keys', 'revoke', 'ak_thereisnosuchkey000000']);
    expect(result).toEqual({
      code: 3,
      stdout: '',
      stderr: 'accounts-gateway: no pair ak_thereisnosuchkey000000\n',
    });
  });

  it('refuses a pair beyond keys.maxActivePerSubject with exit 4', async () => {
    for (let i = 0; i < MAX_ACTIVE; i += 1)
      expect((await cli(['keys', 'create', '--subject', 'subject-keys-5'])).code).toBe(0);
    const result = await cli(['keys', 'create', '--subject', 'subject-keys-5']);
    expect(result).toEqual({
      code: 4,
      stdout: '',
      stderr: `accounts-gateway: subject subject-keys-5 already has ${MAX_ACTIVE} active pairs (keys.maxActivePerSubject)\n`,
    });
    expect(await store.listKeys('subject-keys-5')).toHaveLength(MAX_ACTIVE);
  });

  it('refuses a label with a control or bidi character or over 200 characters (exit 2), as the API does', async () => {
    for (const label of ['two\nlines', 'x'.repeat(201), 'a\u0085b', 'a\u202eb']) {
      const result = await cli(['keys', 'create', '--subject', 'subject-keys-6', '--label', label]);
      expect(result).toEqual({
        code: 2,
        stdout: '',
        stderr:
          'accounts-gateway: --label must be at most 200 characters, without control or bidi characters\n',
      });
    }
    expect(await store.listKeys('subject-keys-6')).toEqual([]);
  });

  it('works from a config file that names the Redis store, without --redis-url', async () => {
    const result = await runCli([
      'keys',
      'create',
      '--subject',
      'subject-keys-6',
      '--json',
      '--config',
      redisFileConfig,
    ]);
    expect(result.code).toBe(0);
    const { key } = JSON.parse(result.stdout) as { key: string };
    expect(await store.getKey(key)).toMatchObject({ subject: 'subject-keys-6' });
  });
});

describe('store problems', () => {
  it('exits 2 with a message for a memory-store config without --redis-url', async () => {
    for (const args of [
      ['keys', 'list', '--subject', 's'],
      ['users', 'remove', 'alice'],
    ]) {
      const result = await runCli([...args, '--config', memoryConfig]);
      expect(result).toEqual({
        code: 2,
        stdout: '',
        stderr:
          'accounts-gateway: these commands manage the Redis store: set credentials.store: redis or pass --redis-url\n',
      });
    }
  });

  it('exits 2 from migrate when no single-slot layout is configured, saying so', async () => {
    const config = writeConfig(
      gatewayYaml({
        redis: { url: redisUrl, keyPrefix: prefix },
        config: { credentials: { redis: { singleSlotPrefix: false } } },
      }),
    );
    expect(await runCli(['migrate', '--apply', '--config', config])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'accounts-gateway: credentials.redis.singleSlotPrefix is false: there is no single-slot layout to move from\n',
    });
  });

  it('exits 1 with a clear message and no stack trace when Redis is unreachable', async () => {
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const result = await runCli([
      'keys',
      'create',
      '--subject',
      's',
      '--config',
      memoryConfig,
      '--redis-url',
      closed,
    ]);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `accounts-gateway: the credential store is unavailable: Redis ${closed}: unreachable, connection refused (connect ECONNREFUSED ${closed.slice(8)})\n`,
    });
  });

  it('exits 1 the same way for users add, after reading the password', async () => {
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const result = await runCli(
      [
        'users',
        'add',
        'zed',
        '--subject',
        'subject-zed',
        '--config',
        memoryConfig,
        '--redis-url',
        closed,
      ],
      { stdin: 'zed-password-1\n' },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^accounts-gateway: the credential store is unavailable: Redis redis:\/\/127\.0\.0\.1:\d+: unreachable, connection refused \(.*\)\n$/,
    );
    expect(result.stderr).not.toMatch(NO_STACK);
  });
});

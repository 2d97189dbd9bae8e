import bcrypt from 'bcrypt';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CredentialStore } from '../../src/credentials/credential-store.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { killCliChildren, runCli, runCliOnTerminal } from '../support/run-cli.js';
import { uniquePrefix } from '../support/seed-redis.js';

// The no-echo prompt of hash-password and users add|passwd on a real terminal (a pty): it
// puts the terminal in raw mode, where Ctrl-C and Ctrl-D are keys the prompt must answer.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('cliprompt');
let config: string;
let store: CredentialStore;

beforeAll(() => {
  config = writeConfig(gatewayYaml({ config: { credentials: { redis: { keyPrefix: prefix } } } }));
  store = openRedisStore(redisConfig(redisUrl, prefix));
});

afterEach(() => killCliChildren());
afterAll(() => store?.close());

const CTRL_C = '\x03';
const CTRL_D = '\x04';
const HASH = /\$2b\$04\$/;

const users = (args: string[]) => ['users', ...args, '--config', config, '--redis-url', redisUrl];
const asked = (question: string, keys: string) => ({ after: question, keys });

describe('the password prompt on a terminal', () => {
  it('asks hash-password for a secret twice and prints its hash, without echoing it', async () => {
    const result = await runCliOnTerminal(
      ['hash-password', '--cost', '4'],
      [asked('Secret: ', 'typed-secret-1\r'), asked('Repeat secret: ', 'typed-secret-1\r')],
    );
    expect(result.code).toBe(0);
    expect(result.output).toMatch(HASH);
    expect(result.output).not.toContain('typed-secret-1');
  });

  it('ends at Ctrl-C with exit 130 and "cancelled", the terminal given back echoing', async () => {
    const result = await runCliOnTerminal(
      ['hash-password', '--cost', '4'],
      [asked('Secret: ', `half-typed${CTRL_C}`)],
    );
    expect(result).toMatchObject({ code: 130, echo: true, canonical: true });
    expect(result.output).toMatch(/Secret: [^\n]*\r\naccounts-gateway: cancelled\r\n$/);
  });

  it('ends users add at Ctrl-C too, and adds no user', async () => {
    const result = await runCliOnTerminal(users(['add', 'cancelled-user', '--subject', 's']), [
      asked('Password: ', 'typed-pass-1\r'),
      asked('Repeat password: ', CTRL_C),
    ]);
    expect(result).toMatchObject({ code: 130, echo: true, canonical: true });
    expect(result.output).toContain('accounts-gateway: cancelled');
    expect(await store.getUser('cancelled-user')).toBeUndefined();
  });

  it('ends hash-password at Ctrl-D on either prompt with exit 2, a sentence and no hash', async () => {
    const atFirst = await runCliOnTerminal(
      ['hash-password', '--cost', '4'],
      [asked('Secret: ', CTRL_D)],
    );
    const atRepeat = await runCliOnTerminal(
      ['hash-password', '--cost', '4'],
      [asked('Secret: ', 'typed-secret-1\r'), asked('Repeat secret: ', CTRL_D)],
    );
    for (const result of [atFirst, atRepeat]) {
      expect(result).toMatchObject({ code: 2, echo: true, canonical: true });
      expect(result.output).toContain('accounts-gateway: no secret given\r\n');
      expect(result.output).not.toMatch(HASH);
    }
  });

  it('ends users add at Ctrl-D with exit 2, and users passwd at Ctrl-D leaves the password as it was', async () => {
    const add = await runCliOnTerminal(users(['add', 'eof-user', '--subject', 's']), [
      asked('Password: ', CTRL_D),
    ]);
    expect(add.code).toBe(2);
    expect(add.output).toContain('accounts-gateway: no password given\r\n');
    expect(await store.getUser('eof-user')).toBeUndefined();

    await runCli(users(['add', 'eof-user', '--subject', 's']), { stdin: 'first-password\n' });
    const passwd = await runCliOnTerminal(users(['passwd', 'eof-user']), [
      asked('Password: ', 'second-password\r'),
      asked('Repeat password: ', CTRL_D),
    ]);
    expect(passwd.code).toBe(2);
    expect(passwd.output).toContain('accounts-gateway: no password given\r\n');
    const hash = (await store.getUser('eof-user'))?.passwordHash ?? '';
    expect(await bcrypt.compare('first-password', hash)).toBe(true);
  });
});

describe('an empty stdin', () => {
  it('is no secret at all: exit 2 and a sentence, never an empty success', async () => {
    expect(await runCli(['hash-password', '--cost', '4'], { stdin: '' })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'accounts-gateway: no secret given\n',
    });
  });
});

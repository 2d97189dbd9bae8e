import { afterEach, describe, expect, it } from 'vitest';
import { killCliChildren, runCli } from '../support/run-cli.js';

// What an operator reads before running anything (issue 17): an example in every command's
// --help, and shell completion from yargs.

afterEach(() => killCliChildren());

const COMMANDS = [
  [],
  ['serve'],
  ['check'],
  ['keys'],
  ['keys', 'create'],
  ['keys', 'list'],
  ['keys', 'show'],
  ['keys', 'revoke'],
  ['keys', 'roll'],
  ['keys', 'unlock'],
  ['keys', 'audit'],
  ['users'],
  ['users', 'add'],
  ['users', 'list'],
  ['users', 'passwd'],
  ['users', 'remove'],
  ['hash-password'],
  ['migrate'],
  ['openapi'],
  ['completion'],
  ['config'],
];

describe('--help and completion', () => {
  it.each(COMMANDS.map((command) => [command.join(' ') || '(none)', command]))(
    'shows an example of %s in its --help',
    async (_name, command) => {
      const result = await runCli([...command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/\nExamples:\n {2}accounts-gateway /);
    },
  );

  // Each command's --help lists what it takes and nothing else: the listeners and the upstream
  // mean something to what serves (serve, check, config), the store's URL to what opens it.
  const SERVE = ['config', 'redis-url', 'listen', 'admin-listen', 'upstream-url', 'workers'];
  const STORE = ['config', 'redis-url', 'json'];
  const OPTIONS: [string[], string[]][] = [
    [[], []],
    [['serve'], SERVE],
    [['check'], [...SERVE, 'connect']],
    [['config'], [...SERVE, 'json']],
    [['keys'], []],
    [
      ['keys', 'create'],
      [...STORE, 'subject', 'label', 'expires', 'scopes', 'count'],
    ],
    [
      ['keys', 'list'],
      [...STORE, 'subject', 'expiring'],
    ],
    [['keys', 'show'], STORE],
    [['keys', 'revoke'], STORE],
    [
      ['keys', 'roll'],
      [...STORE, 'overlap'],
    ],
    [
      ['keys', 'unlock'],
      [...STORE, 'key', 'username', 'address'],
    ],
    [
      ['keys', 'audit'],
      [...STORE, 'subject', 'key', 'action', 'since', 'until', 'limit', 'follow'],
    ],
    [['users'], []],
    [
      ['users', 'add'],
      [...STORE, 'subject', 'scopes'],
    ],
    [['users', 'list'], STORE],
    [['users', 'passwd'], STORE],
    [
      ['users', 'remove'],
      [...STORE, 'revoke-keys'],
    ],
    [['hash-password'], ['config', 'cost']],
    [['migrate'], [...STORE, 'apply']],
    [['openapi'], []],
    [['completion'], []],
  ];

  it.each(OPTIONS.map(([command, options]) => [command.join(' ') || '(none)', command, options]))(
    'lists in the --help of %s only the options it takes',
    async (_name, command, options) => {
      const result = await runCli([...command, '--help']);
      expect(result.code).toBe(0);
      // The Options section only: an example's wrapped line may start with an option too.
      const section = /\nOptions:\n([\s\S]*?)(?:\n\n|$)/.exec(result.stdout)?.[1] ?? '';
      const listed = [...section.matchAll(/^ {2}(?:-\w, | {4})?--([\w-]+)/gm)].map(
        ([, name]) => name,
      );
      expect(listed.sort()).toEqual(['help', 'version', ...options].sort());
    },
  );

  it('refuses --listen on a command of the store, naming it', async () => {
    const result = await runCli(['keys', 'list', '--subject', 'alice', '--listen', '8081']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown argument: listen');
  });

  it('prints a bash completion script for accounts-gateway', async () => {
    // yargs writes a zsh script instead when $SHELL names zsh.
    const result = await runCli(['completion'], { env: { SHELL: '/bin/bash' } });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('###-begin-accounts-gateway-completions-###');
    expect(result.stdout).toContain('complete -o bashdefault -o default -F');
  });

  it('completes the commands under keys, which the script asks the CLI for', async () => {
    const result = await runCli(['--get-yargs-completions', 'keys', '']);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toEqual(
      expect.arrayContaining(['create', 'list', 'show', 'revoke', 'roll', 'unlock', 'audit']),
    );
  });

  it('completes options by their long names, never offering the -c alias as --c', async () => {
    const result = await runCli(['--get-yargs-completions', 'hash-password', '--']);
    expect(result.code).toBe(0);
    const offered = result.stdout.split('\n');
    expect(offered).toEqual(expect.arrayContaining(['--config', '--cost']));
    expect(offered).not.toContain('--c');
  });
});

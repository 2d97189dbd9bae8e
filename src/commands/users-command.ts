import {
  addUserCommand,
  changePasswordCommand,
  listUsersCommand,
  parseScopesOption,
  removeUserCommand,
} from './admin-commands.js';
import { withCommands, type CliCommand } from './cli-command.js';
import { readPassword } from './read-password.js';
import { runAdmin, withJson } from './store-command.js';

const addUserCli: CliCommand = (yargs) =>
  yargs.command(
    'add <username>',
    'Add a user; the password is read from stdin or a prompt',
    (c) =>
      withJson(c)
        .positional('username', { type: 'string', demandOption: true })
        .option('subject', { type: 'string', demandOption: true })
        .option('scopes', {
          type: 'string',
          describe: 'scopes of the user’s tokens, comma-separated',
        })
        .example('$0 users add alice --subject alice < password.txt', 'the password from a file'),
    async (args) => {
      const scopes = parseScopesOption(args.scopes);
      const password = await readPassword();
      await runAdmin(args, (config, admin, out) =>
        addUserCommand(config, admin, out, args.username, args.subject, password, scopes),
      );
    },
  );

const listUsersCli: CliCommand = (yargs) =>
  yargs.command(
    'list',
    'List every user (never a password hash)',
    (c) => withJson(c).example('$0 users list --json', 'username, subject, created_at, scopes'),
    (args) => runAdmin(args, (config, { store }, out) => listUsersCommand(config, store, out)),
  );

const changePasswordCli: CliCommand = (yargs) =>
  yargs.command(
    'passwd <username>',
    "Change a user's password (read from stdin or a prompt)",
    (c) =>
      withJson(c)
        .positional('username', { type: 'string', demandOption: true })
        .example('$0 users passwd alice', 'asks twice without echo'),
    async (args) => {
      const password = await readPassword();
      await runAdmin(args, (config, admin, out) =>
        changePasswordCommand(config, admin, out, args.username, password),
      );
    },
  );

const removeUserCli: CliCommand = (yargs) =>
  yargs.command(
    'remove <username>',
    'Remove a user; says how many active pairs its subject keeps',
    (c) =>
      withJson(c)
        .positional('username', { type: 'string', demandOption: true })
        .option('revoke-keys', {
          type: 'boolean',
          default: false,
          describe: "also revoke every active pair of the user's subject, on every gateway",
        })
        .example('$0 users remove alice --revoke-keys', "and revoke the subject's pairs"),
    (args) =>
      runAdmin(args, (_config, admin, out) =>
        removeUserCommand(admin, out, args.username, args.revokeKeys),
      ),
  );

/** `users add|list|passwd|remove`: the web application's users (password -> token exchange). */
export const usersCli: CliCommand = (yargs) =>
  yargs.command('users', 'Manage web-app users (password -> token exchange)', (y) =>
    withCommands(y, [addUserCli, listUsersCli, changePasswordCli, removeUserCli])
      .example('$0 users passwd alice', 'change a password')
      .demandCommand(1, 'Name a users command: add, list, passwd or remove.'),
  );

import {
  createKeyCommand,
  listKeysCommand,
  MAX_COUNT,
  parseCountOption,
  parseScopesOption,
  revokeKeyCommand,
  showKeyCommand,
} from './admin-commands.js';
import { auditCli } from './audit-command.js';
import { withCommands, type CliCommand } from './cli-command.js';
import { CliError, EXIT } from './cli-error.js';
import { loadStoreConfig } from './config-options.js';
import { listExpiringCommand, parseExpiringOption } from './expiring-keys-command.js';
import { rollKeyCli } from './roll-key-command.js';
import { runAdmin, stdoutOutput, withJson } from './store-command.js';
import { unlockCommand } from './unlock-command.js';

const createKeyCli: CliCommand = (yargs) =>
  yargs.command(
    'create',
    'Make a pair for a subject; prints the secret once',
    (c) =>
      withJson(c)
        .option('subject', { type: 'string', demandOption: true })
        .option('label', { type: 'string', default: '' })
        .option('expires', {
          type: 'string',
          describe: 'when the pair stops working: 90d, 12h, 30m, 3600s or an RFC 3339 time',
        })
        .option('scopes', { type: 'string', describe: 'the pair’s scopes, comma-separated' })
        .option('count', {
          type: 'string',
          describe: `make this many pairs alike in one run (1 to ${MAX_COUNT}), a line each`,
        })
        .example(
          '$0 keys create --subject alice --expires 90d --scopes read',
          'prints the secret once',
        )
        .example(
          '$0 keys create --subject load --count 300 --json > pairs.jsonl',
          'a JSON line per pair, secret included',
        ),
    (args) => {
      // Checked before the store is opened.
      const count = parseCountOption(args.count);
      const scopes = parseScopesOption(args.scopes);
      return runAdmin(args, (config, admin, out) =>
        createKeyCommand(
          config,
          admin,
          out,
          { subject: args.subject, label: args.label, expires: args.expires, scopes },
          count,
        ),
      );
    },
  );

const listKeysCli: CliCommand = (yargs) =>
  yargs.command(
    'list',
    "List a subject's pairs (never a secret), or the pairs ending soon",
    (c) =>
      withJson(c)
        .option('subject', {
          type: 'string',
          describe: 'whose pairs; with --expiring, leave it out for every subject',
        })
        .option('expiring', {
          type: 'string',
          describe: 'only the active pairs ending within this (30d, 12h), the soonest first',
        })
        .example('$0 keys list --subject alice', 'key, status, created, expiry, scopes, label')
        .example('$0 keys list --expiring 30d', "every subject's pairs ending within 30 days"),
    (args) => {
      // Checked before the store is opened.
      const expiring = args.expiring === undefined ? undefined : parseExpiringOption(args.expiring);
      const { subject } = args;
      if (expiring !== undefined)
        return runAdmin(args, (_config, { store }, out) =>
          listExpiringCommand(store, out, expiring, subject),
        );
      if (subject === undefined)
        throw new CliError('keys list needs --subject, or --expiring (every subject)', EXIT.usage);
      return runAdmin(args, (_config, { store }, out) => listKeysCommand(store, out, subject));
    },
  );

const showKeyCli: CliCommand = (yargs) =>
  yargs.command(
    'show <key>',
    'Show one pair (never its secret or hash)',
    (c) =>
      withJson(c)
        .positional('key', { type: 'string', demandOption: true })
        .example('$0 keys show ak_... --json', 'the pair as GET /keys shows it, with its subject'),
    (args) => runAdmin(args, (_config, { store }, out) => showKeyCommand(store, out, args.key)),
  );

const revokeKeyCli: CliCommand = (yargs) =>
  yargs.command(
    'revoke <key>',
    'Revoke a pair on every gateway at once',
    (c) =>
      withJson(c)
        .positional('key', { type: 'string', demandOption: true })
        .example('$0 keys revoke ak_...', 'refused by every gateway at once'),
    (args) => runAdmin(args, (_config, admin, out) => revokeKeyCommand(admin, out, args.key)),
  );

const unlockCli: CliCommand = (yargs) =>
  yargs.command(
    'unlock',
    'Lift a lockout (a key, a username, an address) on Redis and every gateway',
    (c) =>
      withJson(c)
        .option('key', { type: 'string', describe: 'a key id, as clients send it' })
        .option('username', { type: 'string', describe: 'a username of POST /auth/token' })
        .option('address', {
          type: 'string',
          describe: 'a client address: its network as server.clientNetworks counts it',
        })
        .example('$0 keys unlock --key ak_...', 'the key from every address, at once')
        .example(
          '$0 keys unlock --username alice --address 2001:db8::7',
          'the username, and the /64 of that address',
        ),
    (args) => unlockCommand(loadStoreConfig(args), stdoutOutput(args.json), args),
  );

/**
 * `keys create|list|show|revoke|roll|unlock|audit`: the pairs in the store, the lockouts, and
 * the audit trail of their changes.
 */
export const keysCli: CliCommand = (yargs) =>
  yargs.command('keys', 'Manage key/secret pairs in the Redis store', (y) =>
    withCommands(y, [
      createKeyCli,
      listKeysCli,
      showKeyCli,
      revokeKeyCli,
      rollKeyCli,
      unlockCli,
      auditCli,
    ])
      .example('$0 keys list --subject alice', "the subject's pairs")
      .demandCommand(1, 'Name a keys command: create, list, show, revoke, roll, unlock or audit.'),
  );

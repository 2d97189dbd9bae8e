import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import {
  addUserCommand,
  changePasswordCommand,
  createKeyCommand,
  listKeysCommand,
  listUsersCommand,
  MAX_COUNT,
  parseCountOption,
  parseScopesOption,
  removeUserCommand,
  revokeKeyCommand,
  showKeyCommand,
  withStore,
  type Output,
} from './commands/admin-commands.js';
import { CliError, EXIT } from './commands/cli-error.js';
import {
  loadConfigFromArgs,
  STORE_FLAGS,
  withConfigFile,
  withServeOverrides,
  withStoreOptions,
  type ConfigArgs,
} from './commands/config-options.js';
import { checkConnections } from './commands/check-connections.js';
import { checkKeyMaterial } from './commands/check-key-material.js';
import { checkCostOption, hashPasswordCommand } from './commands/hash-password.js';
import { migrateCommand } from './commands/migrate-command.js';
import { readPassword } from './commands/read-password.js';
import { unlockCommand } from './commands/unlock-command.js';
import { oneGateway } from './commands/serve.js';
import type { GatewayConfig } from './config/config-schema.js';
import { ConfigError } from './config/load-config.js';
import { showConfig } from './config/show-config.js';
import type { CredentialStore } from './credentials/credential-store.js';
import { supervise } from './lifecycle/supervisor.js';
import { createLogger } from './observability/create-logger.js';
import { openApiJson } from './openapi/openapi-json.js';
import { WORKER_ENV } from './workers/messages.js';

/** The store's commands: --config, --redis-url and --json. */
const withJson = <T>(y: Argv<T>) =>
  withStoreOptions(y).option('json', { type: 'boolean', default: false, describe: 'print JSON' });

/** The configuration a store's command reads: --redis-url (or its variable) its only override. */
const loadStoreConfig = (args: ConfigArgs): GatewayConfig =>
  loadConfigFromArgs(args, process.env, STORE_FLAGS);

type AdminAction = (config: GatewayConfig, store: CredentialStore, output: Output) => Promise<void>;

/** What a command prints goes to stdout, as text or (`--json`) as JSON. */
function stdoutOutput(json: boolean): Output {
  return { json, write: (text) => process.stdout.write(text) };
}

/** Loads the config, opens its store, runs the command, closes the store. */
async function runAdmin(args: ConfigArgs & { json: boolean }, action: AdminAction): Promise<void> {
  const config = loadStoreConfig(args);
  const output = stdoutOutput(args.json);
  await withStore(config, (store) => action(config, store, output));
}

/** --workers, for serve (and check, which validates what serve would run). */
const withWorkersOption = <T>(y: Argv<T>) =>
  withServeOverrides(y).option('workers', {
    type: 'string',
    describe: 'processes serving the API port: a number, or auto (one per core)',
  });

const withServeOptions = <T>(y: Argv<T>) =>
  withWorkersOption(y)
    .example('$0 serve -c gateway.yaml', 'serve with this configuration')
    .example('$0 serve --workers auto', 'one process per core on the API port');

/** The configuration with every override, --workers included. */
function loadServeConfig(args: ConfigArgs & { workers: string | undefined }): GatewayConfig {
  return loadConfigFromArgs(args);
}

/** This process's slot when it is a worker forked by `serve --workers`, else undefined. */
async function workerSlot(): Promise<number | undefined> {
  const slot = process.env[WORKER_ENV];
  if (slot === undefined) return undefined;
  const { default: cluster } = await import('node:cluster');
  return cluster.isWorker ? Number(slot) : undefined;
}

/**
 * Set once `serve` runs: when it ends (drained, a second signal, a port that would not
 * open), the process exits at once, whatever a lingering handle would keep alive.
 */
let serving = false;

/**
 * With the entry (cli.ts, which refuses an old Node), the only place that reads argv, sets
 * the exit code or exits.
 */
async function main(argv: string[]): Promise<number> {
  let exitCode: number = EXIT.ok;
  const cli = yargs(argv);
  await cli
    .scriptName('accounts-gateway')
    .command('serve', 'Run the gateway', withServeOptions, async (args) => {
      const slot = await workerSlot();
      if (slot !== undefined) {
        // A worker of `serve --workers`: its configuration comes from the primary.
        const { serveWorker } = await import('./workers/worker.js');
        serving = true;
        exitCode = await serveWorker(slot);
        return;
      }
      const config = loadServeConfig(args);
      await checkKeyMaterial(config, args.config, { startFiles: true });
      // SIGHUP validates what a start does, key material included, but for the files only a
      // start reads (see KeyMaterialScope).
      const reloadConfig = async (): Promise<GatewayConfig> => {
        const next = loadServeConfig(args);
        await checkKeyMaterial(next, args.config, { startFiles: false });
        return next;
      };
      const { workers } = config.server;
      const primary = workers === 1 ? undefined : await import('./workers/primary.js');
      const count = primary?.resolveWorkerCount(workers) ?? 1;
      const set = count > 1 ? primary : undefined;
      const { level } = config.logging;
      const logger = set === undefined ? createLogger(level) : set.primaryLogger(level);
      // The supervisor resolves or rejects only after its log lines are written.
      serving = true;
      exitCode = await supervise({
        config,
        reloadConfig,
        logger,
        target: (resolved) =>
          set === undefined ? oneGateway(resolved, logger) : set.workerSet(resolved, count, logger),
      });
    })
    .command(
      'check',
      'Validate a configuration file and exit',
      (y) =>
        withWorkersOption(y)
          .option('connect', {
            type: 'boolean',
            default: false,
            describe: 'also try Redis and every upstream, and say what answered',
          })
          .example(
            '$0 check -c gateway.yaml --connect',
            'validate, then try Redis and the upstreams',
          ),
      async (args) => {
        const config = loadServeConfig(args);
        await checkKeyMaterial(config, args.config, { startFiles: true });
        process.stdout.write(`${args.config}: configuration is valid\n`);
        if (!args.connect) return;
        const checks = await checkConnections(config);
        for (const check of checks) process.stdout.write(`${check.line}\n`);
        const failed = checks.filter((check) => !check.answered).length;
        if (failed > 0)
          throw new CliError(`${failed} of ${checks.length} did not answer`, EXIT.failure);
      },
    )
    .command(
      'config',
      'Print the configuration serve would run: defaults filled in, ${ENV} and overrides applied, secrets redacted',
      (y) =>
        withWorkersOption(y)
          .option('json', { type: 'boolean', default: false, describe: 'print JSON, not YAML' })
          .example('$0 config -c gateway.yaml', 'every setting in effect, as YAML')
          .example('$0 config --json | jq .server', 'one section'),
      (args) => {
        const config = loadServeConfig(args);
        process.stdout.write(showConfig(config, args.json ? 'json' : 'yaml', args.config));
      },
    )
    .command('keys', 'Manage key/secret pairs in the Redis store', (y) =>
      y
        .command(
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
            return runAdmin(args, (config, store, out) =>
              createKeyCommand(
                config,
                store,
                out,
                { subject: args.subject, label: args.label, expires: args.expires, scopes },
                count,
              ),
            );
          },
        )
        .command(
          'list',
          "List a subject's pairs (never a secret)",
          (c) =>
            withJson(c)
              .option('subject', { type: 'string', demandOption: true })
              .example(
                '$0 keys list --subject alice',
                'key, status, created, expiry, scopes, label',
              ),
          (args) =>
            runAdmin(args, (_config, store, out) => listKeysCommand(store, out, args.subject)),
        )
        .command(
          'show <key>',
          'Show one pair (never its secret or hash)',
          (c) =>
            withJson(c)
              .positional('key', { type: 'string', demandOption: true })
              .example(
                '$0 keys show ak_... --json',
                'the pair as GET /keys shows it, with its subject',
              ),
          (args) => runAdmin(args, (_config, store, out) => showKeyCommand(store, out, args.key)),
        )
        .command(
          'revoke <key>',
          'Revoke a pair on every gateway at once',
          (c) =>
            withJson(c)
              .positional('key', { type: 'string', demandOption: true })
              .example('$0 keys revoke ak_...', 'refused by every gateway at once'),
          (args) => runAdmin(args, (_config, store, out) => revokeKeyCommand(store, out, args.key)),
        )
        .command(
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
        )
        .example('$0 keys list --subject alice', "the subject's pairs")
        .demandCommand(1, 'Name a keys command: create, list, show, revoke or unlock.'),
    )
    .command('users', 'Manage web-app users (password -> token exchange)', (y) =>
      y
        .command(
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
              .example(
                '$0 users add alice --subject alice < password.txt',
                'the password from a file',
              ),
          async (args) => {
            const scopes = parseScopesOption(args.scopes);
            const password = await readPassword();
            await runAdmin(args, (config, store, out) =>
              addUserCommand(config, store, out, args.username, args.subject, password, scopes),
            );
          },
        )
        .command(
          'list',
          'List every user (never a password hash)',
          (c) =>
            withJson(c).example('$0 users list --json', 'username, subject, created_at, scopes'),
          (args) => runAdmin(args, (config, store, out) => listUsersCommand(config, store, out)),
        )
        .command(
          'passwd <username>',
          "Change a user's password (read from stdin or a prompt)",
          (c) =>
            withJson(c)
              .positional('username', { type: 'string', demandOption: true })
              .example('$0 users passwd alice', 'asks twice without echo'),
          async (args) => {
            const password = await readPassword();
            await runAdmin(args, (config, store, out) =>
              changePasswordCommand(config, store, out, args.username, password),
            );
          },
        )
        .command(
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
            runAdmin(args, (_config, store, out) =>
              removeUserCommand(store, out, args.username, args.revokeKeys),
            ),
        )
        .example('$0 users passwd alice', 'change a password')
        .demandCommand(1, 'Name a users command: add, list, passwd or remove.'),
    )
    .command(
      'hash-password',
      'Print a bcrypt hash of a secret read from stdin or a prompt (for the web application)',
      (c) =>
        withConfigFile(c)
          .option('cost', {
            type: 'string',
            describe: 'bcrypt cost (default: credentials.bcryptCost of the configuration)',
          })
          .example('$0 hash-password < secret.txt', 'its first line, at the configured cost')
          .example('$0 hash-password --cost 12', 'asks twice without echo, then prints the hash'),
      async (args) => {
        // The cost is checked before a prompt asks for anything.
        const cost =
          args.cost === undefined
            ? loadConfigFromArgs(args, process.env, []).credentials.bcryptCost
            : checkCostOption(args.cost);
        const secret = await readPassword('secret');
        await hashPasswordCommand(secret, cost, (text) => process.stdout.write(text));
      },
    )
    .command(
      'migrate',
      'Move pairs and users from the single-slot key layout (singleSlotPrefix); a dry run without --apply',
      (c) =>
        withJson(c)
          .option('apply', {
            type: 'boolean',
            default: false,
            describe: 'move them (without it, only say what would move)',
          })
          .example('$0 migrate', 'say what would move')
          .example('$0 migrate --apply', 'move it'),
      async (args) => {
        const config = loadStoreConfig(args);
        const output = stdoutOutput(args.json);
        await migrateCommand(config, output, args.apply);
      },
    )
    .command(
      'openapi',
      'Print the OpenAPI 3.1 document of the public API (served at GET /openapi.json)',
      (c) => c.example('$0 openapi > docs/openapi.json', 'regenerate the committed document'),
      () => {
        process.stdout.write(openApiJson());
      },
    )
    // A command of ours rather than yargs' .completion(), which prints the script even for
    // `completion --help`; the script's `--get-yargs-completions` needs no registration.
    .command(
      'completion',
      'Print a bash/zsh completion script (accounts-gateway must be on PATH)',
      (c) => c.example('$0 completion >> ~/.bashrc', 'complete commands and options in bash'),
      () => {
        cli.showCompletionScript();
      },
    )
    .example('$0 completion >> ~/.bashrc', 'complete commands and options in bash')
    .demandCommand(
      1,
      'Name a command: serve, check, config, keys, users, hash-password, migrate, openapi or completion.',
    )
    .strict()
    .help()
    .fail((message, error) => {
      throw error ?? new CliError(message, EXIT.usage);
    })
    .parseAsync();
  return exitCode;
}

// A reader that stops early (`openapi | head -1`) closes the pipe, and the next write fails
// with EPIPE: an error event nobody heard, a stack trace and exit 1. The command ends quietly
// instead, and with 0 rather than 141 (what a shell reports for a tool killed by SIGPIPE, a
// signal Node ignores): the reader had all it wanted, whatever the command changed is done,
// and a script under `set -o pipefail` should not fail for a `| head`. `serve` logs to a
// pipe it must not outlive silently, so it keeps Node's behaviour.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' || serving) throw error;
  process.exit(EXIT.ok);
});

function finish(code: number): void {
  process.exitCode = code;
  // The supervisor and a worker resolve or reject only after their log lines are written.
  if (serving) process.exit(code);
}

main(hideBin(process.argv)).then(finish, (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`accounts-gateway: ${message}\n`);
  finish(
    error instanceof CliError
      ? error.exitCode
      : error instanceof ConfigError
        ? EXIT.usage
        : EXIT.failure,
  );
});

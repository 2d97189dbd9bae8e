import type { GatewayConfig } from '../config/config-schema.js';
import { rolledChange } from '../credentials/audit-log.js';
import type { RolledPair } from '../credentials/credential-store.js';
import {
  DEFAULT_ROLL_OVERLAP_SEC,
  parseOverlapOption,
  ROLL_MESSAGES,
  newRoll,
} from '../credentials/key-roll.js';
import { keyView } from '../credentials/key-view.js';
import { createSecretHasher } from '../credentials/secret-hasher.js';
import { GatewayError } from '../errors/gateway-error.js';
import { print, type AdminStore, type Output } from './admin-commands.js';
import type { CliCommand } from './cli-command.js';
import { CliError, EXIT } from './cli-error.js';
import { runAdmin, withJson } from './store-command.js';

/** `keys roll <key> [--overlap 1h]`: as `POST /keys/{key}/roll`, for an operator. */
export const rollKeyCli: CliCommand = (yargs) =>
  yargs.command(
    'roll <key>',
    'Make a successor of a pair (its label, scopes, expiry); the old one ends after the overlap',
    (c) =>
      withJson(c)
        .positional('key', { type: 'string', demandOption: true })
        .option('overlap', {
          type: 'string',
          describe:
            'how long the old pair keeps working: 0 (revoked at once) to 24h; 1h if not given',
        })
        .example('$0 keys roll ak_... --overlap 30m', 'prints the new secret once'),
    (args) => {
      // Checked before the store is opened.
      const overlapSec =
        args.overlap === undefined ? DEFAULT_ROLL_OVERLAP_SEC : parseOverlapOption(args.overlap);
      if (overlapSec === undefined) throw new CliError(ROLL_MESSAGES.option, EXIT.usage);
      return runAdmin(args, (config, admin, out) =>
        rollKeyCommand(config, admin, out, args.key, overlapSec),
      );
    },
  );

/**
 * Rolls `key` (credentials/key-roll.ts): the successor is printed once, with its secret, as
 * `keys create` prints a pair; then when the old pair ends. The cap is the API's.
 */
export async function rollKeyCommand(
  config: GatewayConfig,
  { store, record }: AdminStore,
  output: Output,
  key: string,
  overlapSec: number,
): Promise<void> {
  const pair = await store.getKey(key);
  if (pair === undefined) throw new CliError(`no pair ${key}`, EXIT.notFound);
  const { subject } = pair;
  const nowMs = Date.now();
  const hasher = createSecretHasher(config.credentials.bcryptCost);
  const { roll, secret } = await newRoll(key, subject, overlapSec, nowMs, (text) =>
    hasher.hash(text),
  );
  const cap = config.keys.maxActivePerSubject;
  const rolled = await asCliRefusal(
    () => store.rollKey(roll, cap),
    `subject ${subject} already has ${cap} active pairs besides ${key} (keys.maxActivePerSubject; an earlier roll is in its overlap)`,
  );
  if (rolled === undefined) throw new CliError(`no pair ${key}`, EXIT.notFound);
  await record(rolledChange(rolled));
  const { successor, rolled: old } = rolled;
  const view = {
    ...keyView(successor, nowMs),
    subject,
    secret,
    previous: keyView(old, nowMs),
  };
  const ends = old.status === 'revoked' ? 'revoked now' : `ends ${old.expiresAt ?? 'never'}`;
  print(
    output,
    view,
    `key:    ${successor.key}\nsecret: ${secret}\n${successor.expiresAt === undefined ? '' : `expires: ${successor.expiresAt}\n`}rolled: ${key} (${ends})\n(the secret is shown this once)`,
  );
}

/** The store's refusals of a roll as the CLI's: exit 4, with the reason. */
async function asCliRefusal(
  roll: () => Promise<RolledPair | undefined>,
  capped: string,
): Promise<RolledPair | undefined> {
  try {
    return await roll();
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'conflict')
      throw new CliError(error.message, EXIT.conflict);
    if (error instanceof GatewayError && error.code === 'limit_exceeded')
      throw new CliError(capped, EXIT.conflict);
    throw error;
  }
}

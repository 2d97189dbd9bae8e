import { migrateSingleSlot, type MigrationReport } from '../backends/redis/migrate.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { adminRedisConfig, asCliFailure, print, type Output } from './admin-commands.js';
import type { CliCommand } from './cli-command.js';
import { CliError, EXIT } from './cli-error.js';
import { loadStoreConfig } from './config-options.js';
import { stdoutOutput, withJson } from './store-command.js';

/** `migrate [--apply]` as the CLI declares it; what it does is migrateCommand below. */
export const migrateCli: CliCommand = (yargs) =>
  yargs.command(
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
  );

/**
 * `migrate [--apply]`: moves the pairs, users and subjects' settings of the single-slot layout
 * (`credentials.redis.singleSlotPrefix`) into today's layout; without --apply, a dry run that
 * says what it would move and what it would leave.
 */
export async function migrateCommand(
  config: GatewayConfig,
  output: Output,
  apply: boolean,
): Promise<void> {
  const redis = adminRedisConfig(config);
  if (redis.singleSlotPrefix === false)
    throw new CliError(
      'credentials.redis.singleSlotPrefix is false: there is no single-slot layout to move from',
      EXIT.usage,
    );
  const report = await asCliFailure(() =>
    migrateSingleSlot(redis, {
      apply,
      retention: { retainEndedSec: config.keys.retainEndedDays * 86_400 },
    }),
  );
  print(output, report, describeReport(report));
}

/** Why something stays in the single slot (where the gateway still reads it), and what to do. */
const WHY_LEFT: Record<MigrationReport['left'][number]['reason'], string> = {
  fragment:
    'fields without a whole pair (no subject or secret_hash) and no pair of this id to merge them into; delete it or complete it',
  'tag-mismatch':
    "its id carries another tag than its subject's, so the id could not find it there; revoke it and make another",
  'id-taken': "its id already names another subject's pair there; revoke it and make another",
  busy: 'it changed under every attempt; run migrate again',
};

function describeReport(report: MigrationReport): string {
  const what = `${report.pairs} pair${report.pairs === 1 ? '' : 's'}, ${report.users} user${report.users === 1 ? '' : 's'}, ${report.settings} subject settings`;
  const lines = report.applied
    ? [`moved from ${report.from} to ${report.to}: ${what}`]
    : [
        `dry run, nothing changed (--apply moves): from ${report.from} to ${report.to}, ${what} to move`,
      ];
  for (const { name, reason } of report.left)
    lines.push(`${report.applied ? 'left' : 'would leave'} ${name}: ${WHY_LEFT[reason]}`);
  if (report.expiring > 0)
    lines.push(
      `${report.expiring} lockout counters and rate buckets stay where they are until they expire`,
    );
  if (report.applied && report.left.length === 0)
    lines.push('nothing left to move: set credentials.redis.singleSlotPrefix: false');
  return lines.join('\n');
}

import { hostname, userInfo } from 'node:os';
import {
  auditRecord,
  createAuditTrail,
  type AuditChange,
  type AuditLog,
  type AuditOrigin,
} from '../credentials/audit-log.js';
import { describeFailure } from '../errors/describe-failure.js';

/** The operating-system user running the command: its name, else its uid (a container's). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/** Who the CLI's changes are made by: the OS user who ran it, through `cli`, on this host. */
export function cliOrigin(): AuditOrigin {
  return { actor: `os:${osUser()}`, via: 'cli' };
}

/** Records one change a command made, as made by the CLI (never rejects). */
export type RecordChange = (change: AuditChange) => Promise<void>;

/**
 * The audit trail of a one-off command, on its store's log. An event that cannot be appended
 * does not fail the command (its change is made, and printed): it is written to stderr, whole,
 * so what the stream lost is in the operator's hands (and in a job's log), and the exit code
 * stays the change's.
 */
export function cliRecorder(
  log: AuditLog,
  write: (text: string) => void = (text) => process.stderr.write(text),
): RecordChange {
  const origin = cliOrigin();
  const trail = createAuditTrail(log, {
    host: hostname(),
    now: Date.now,
    failed: (event, error) => {
      const why = describeFailure(error);
      write(
        `accounts-gateway: the change was made, but its audit event was not written${why === undefined ? '' : ` (${why})`}: ${JSON.stringify(auditRecord(event))}\n`,
      );
    },
  });
  return (change) => trail.record(origin, change);
}

import type { CredentialStore, KeySummary } from '../credentials/credential-store.js';
import { endsBy } from '../credentials/expiring-pairs.js';
import { MAX_KEY_LIFETIME_SEC, parseDurationSec } from '../credentials/key-expiry.js';
import { keyView } from '../credentials/key-view.js';
import { allPairs, checkSubject, print, scopesText, type Output } from './admin-commands.js';
import { CliError, EXIT } from './cli-error.js';

export const EXPIRING_MESSAGE =
  '--expiring must be a duration (30d, 12h, 30m, 3600s) of at most ten years.';

/** How far ahead `--expiring` looks: in seconds, and as given. */
export interface ExpiringOption {
  readonly withinSec: number;
  readonly text: string;
}

/** `--expiring 30d`: 1 second to ten years ahead; a CliError (exit 2) for anything else. */
export function parseExpiringOption(text: string): ExpiringOption {
  const withinSec = parseDurationSec(text);
  if (withinSec === undefined || withinSec < 1 || withinSec > MAX_KEY_LIFETIME_SEC)
    throw new CliError(EXPIRING_MESSAGE, EXIT.usage);
  return { withinSec, text };
}

/**
 * `keys list --expiring 30d [--subject S]`: the usable pairs whose expiry comes within the
 * duration, the soonest first, with their subjects. Without --subject, every subject's: a walk
 * over the whole store (CredentialStore.expiringPairs; on a Cluster, each master).
 */
export async function listExpiringCommand(
  store: CredentialStore,
  output: Output,
  expiring: ExpiringOption,
  subject: string | undefined,
): Promise<void> {
  if (subject !== undefined) checkSubject(subject);
  const nowMs = Date.now();
  const untilMs = nowMs + expiring.withinSec * 1000;
  const pairs: KeySummary[] = [];
  if (subject === undefined)
    for await (const pair of store.expiringPairs(untilMs)) pairs.push(pair);
  else pairs.push(...(await allPairs(store, subject)).filter((r) => endsBy(r, nowMs, untilMs)));
  pairs.sort(soonestFirst);
  const within = `${subject === undefined ? '' : ` of ${subject}`} ending within ${expiring.text}`;
  // The label last: it is the one field that may hold spaces.
  const lines = pairs.map((r) =>
    `${r.key}  expires ${r.expiresAt ?? ''}  in ${durationText(Date.parse(r.expiresAt ?? '') - nowMs)}  subject ${r.subject}  scopes ${scopesText(r.scopes)}  ${r.label}`.trimEnd(),
  );
  print(
    output,
    pairs.map((r) => ({ ...keyView(r, nowMs), subject: r.subject })),
    lines.length === 0 ? `no pairs${within}` : lines.join('\n'),
  );
}

/** By end, then by key id: the order is the same whatever order the store walked in. */
function soonestFirst(a: KeySummary, b: KeySummary): number {
  const ends = Date.parse(a.expiresAt ?? '') - Date.parse(b.expiresAt ?? '');
  if (ends !== 0) return ends;
  return a.key === b.key ? 0 : a.key < b.key ? -1 : 1;
}

/** How long, roughly, in the unit of the duration options: `6d`, `13h`, `25m`, `40s`. */
function durationText(ms: number): string {
  const sec = Math.max(0, Math.floor(ms / 1000));
  if (sec >= 86_400) return `${Math.floor(sec / 86_400)}d`;
  if (sec >= 3600) return `${Math.floor(sec / 3600)}h`;
  if (sec >= 60) return `${Math.floor(sec / 60)}m`;
  return `${sec}s`;
}

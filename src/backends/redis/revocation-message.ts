import type { Revocation } from '../../credentials/credential-store.js';
import type { Unlock } from '../../protection/lockout.js';

/**
 * A message of the revocation channel, read: a revocation, or an operator's unlock (`keys
 * unlock`), which every gateway hears on the same subscription.
 */
export type RevocationMessage = (
  { readonly revocation: Revocation } | { readonly unlock: Unlock }
) & {
  /** When it was published, in Unix milliseconds, if the message says (the earlier form does not). */
  readonly publishedAtMs: number | undefined;
};

/** Unix milliseconds, a fraction allowed: what a writer's clock gives (`Date.now()`, PHP's `microtime`). */
const TIME = /^\d{1,15}(\.\d{1,6})?$/;

/**
 * Reads `key:<key>` or `subject:<subject>`, optionally followed by one space and the time it
 * was published in Unix milliseconds (`key:ak_… 1795345200000`, what the gateway's scripts
 * write). Key ids and subjects never contain a space (identity-formats.ts), so the first space
 * ends the name. A time that does not read as one is ignored, never the revocation: a writer's
 * message must evict what it names even when its time is malformed.
 *
 * `unlock:key:<key>`, `unlock:username:<username>` and `unlock:address:<network>` (the
 * network as `server.clientNetworks` counts it: `2001:db8::/64`) lift a lockout; a gateway of
 * an earlier version reads none of them as a revocation, and ignores them.
 */
export function parseRevocationMessage(message: string): RevocationMessage | undefined {
  const space = message.indexOf(' ');
  const name = space === -1 ? message : message.slice(0, space);
  const time = space === -1 ? '' : message.slice(space + 1);
  const publishedAtMs = TIME.test(time) ? Number(time) : undefined;
  if (name.startsWith('key:'))
    return { revocation: { kind: 'key', key: name.slice('key:'.length) }, publishedAtMs };
  if (name.startsWith('subject:'))
    return {
      revocation: { kind: 'subject', subject: name.slice('subject:'.length) },
      publishedAtMs,
    };
  const unlock = parseUnlock(name);
  return unlock === undefined ? undefined : { unlock, publishedAtMs };
}

function parseUnlock(name: string): Unlock | undefined {
  const [head, kind, ...rest] = name.split(':');
  // The network of an IPv6 address holds colons: all of the rest.
  const value = rest.join(':');
  if (head !== 'unlock' || value === '') return undefined;
  if (kind === 'key') return { kind: 'key', key: value };
  if (kind === 'username') return { kind: 'username', username: value };
  if (kind === 'address') return { kind: 'address', network: value };
  return undefined;
}

/** The message that lifts `unlock` on every gateway, as parseRevocationMessage reads it. */
export function unlockMessage(unlock: Unlock): string {
  switch (unlock.kind) {
    case 'key':
      return `unlock:key:${unlock.key}`;
    case 'username':
      return `unlock:username:${unlock.username}`;
    case 'address':
      return `unlock:address:${unlock.network}`;
  }
}

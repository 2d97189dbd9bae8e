import type { Redis } from 'ioredis';
import type { Revocation } from '../../credentials/credential-store.js';
import type { RedisClient } from './client.js';

/** The subscription to the revocation channel: its own connection, closed with the store. */
export interface RevocationSubscription {
  close(): Promise<void>;
}

/**
 * Listens on `channel` (layout.ts) on a connection of its own: `listener` hears every
 * revocation any gateway or writer publishes (`key:<key>`, `subject:<subject>`); `flush` is
 * called each time the subscription stands again, since whatever was published while it did
 * not is lost.
 */
export function subscribeRevocations(
  client: RedisClient,
  channel: string,
  listener: (revocation: Revocation) => void,
  flush: () => void,
): RevocationSubscription {
  // Both client kinds have duplicate(); their signatures differ only in option types.
  const sub = (client as Redis).duplicate();
  sub.on('error', () => {
    // Reconnects by itself; a reconnect flushes (below), so no event is trusted as seen.
  });
  sub.on('ready', () => {
    // Subscribe on every (re)connection: ioredis's autoResubscribe restores only channels
    // that were subscribed before, so a SUBSCRIBE queued while Redis was down at start would
    // be lost for good. Whatever was published while no subscription stood is lost too: once
    // subscribed again, drop everything cached, so a missed revocation cannot outlive the
    // outage.
    sub.subscribe(channel).then(flush, () => {
      // The connection dropped again; the next 'ready' subscribes (and flushes) anew.
    });
  });
  sub.on('message', (_channel: string, message: string) => {
    const revocation = parseRevocation(message);
    if (revocation !== undefined) listener(revocation);
  });
  return {
    async close() {
      await sub.quit().catch(() => undefined);
      sub.disconnect();
    },
  };
}

export function parseRevocation(message: string): Revocation | undefined {
  if (message.startsWith('key:')) return { kind: 'key', key: message.slice(4) };
  if (message.startsWith('subject:')) return { kind: 'subject', subject: message.slice(8) };
  return undefined;
}

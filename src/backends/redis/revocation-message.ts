import type { Revocation } from '../../credentials/credential-store.js';

/** A message of the revocation channel, read. */
export interface RevocationMessage {
  readonly revocation: Revocation;
  /** When it was published, in Unix milliseconds, if the message says (the earlier form does not). */
  readonly publishedAtMs: number | undefined;
}

/** Unix milliseconds, a fraction allowed: what a writer's clock gives (`Date.now()`, PHP's `microtime`). */
const TIME = /^\d{1,15}(\.\d{1,6})?$/;

/**
 * Reads `key:<key>` or `subject:<subject>`, optionally followed by one space and the time it
 * was published in Unix milliseconds (`key:ak_… 1795345200000`, what the gateway's scripts
 * write). Key ids and subjects never contain a space (identity-formats.ts), so the first space
 * ends the name. A time that does not read as one is ignored, never the revocation: a writer's
 * message must evict what it names even when its time is malformed.
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
  return undefined;
}

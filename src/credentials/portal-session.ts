import type { PortalSession } from './credential-store.js';
import { parseJsonObject } from './json-object.js';

/**
 * A portal session as one string: what the Redis store keeps as a field's value (its scripts
 * read `username` and `endsAtMs` with cjson) and what both stores compare in replaceSession.
 * The fields always come in the same order, so two equal sessions encode alike.
 */
export function encodeSession(session: PortalSession): string {
  return JSON.stringify({
    username: session.username,
    subject: session.subject,
    createdAtMs: session.createdAtMs,
    lastSeenMs: session.lastSeenMs,
    endsAtMs: session.endsAtMs,
    ...(session.formNonce === undefined ? {} : { formNonce: session.formNonce }),
  });
}

const isMs = (value: unknown): value is number => Number.isSafeInteger(value);

/** The session a stored string holds; undefined when it is not one (never a guess). */
export function decodeSession(text: string): PortalSession | undefined {
  const fields = parseJsonObject(text);
  if (fields === undefined) return undefined;
  const { username, subject, createdAtMs, lastSeenMs, endsAtMs, formNonce } = fields;
  if (typeof username !== 'string' || typeof subject !== 'string') return undefined;
  if (!isMs(createdAtMs) || !isMs(lastSeenMs) || !isMs(endsAtMs)) return undefined;
  if (formNonce !== undefined && typeof formNonce !== 'string') return undefined;
  return {
    username,
    subject,
    createdAtMs,
    lastSeenMs,
    endsAtMs,
    ...(formNonce === undefined ? {} : { formNonce }),
  };
}

/** True once the session has ended at `nowMs`. */
export function hasEnded(session: PortalSession, nowMs: number): boolean {
  return session.endsAtMs <= nowMs;
}

import type { PortalSession, UserRecord } from '../credentials/credential-store.js';

/** How long a session lasts (`portal.idleTimeoutSec`, `portal.absoluteTimeoutSec`), in ms. */
export interface SessionLifetimes {
  /** Not seen for this long, a session ends. */
  readonly idleMs: number;
  /** This long after its sign-in, a session ends however active. */
  readonly absoluteMs: number;
}

/**
 * A session's last-seen time is written at most once per this long: a page view within it
 * costs no store write, and the idle end moves a minute late at most.
 */
export const SEEN_WRITE_INTERVAL_MS = 60_000;

/** When a session made at `createdAtMs` and seen at `lastSeenMs` ends: the earlier end. */
function endOfSession(
  createdAtMs: number,
  lastSeenMs: number,
  lifetimes: SessionLifetimes,
): number {
  return Math.min(createdAtMs + lifetimes.absoluteMs, lastSeenMs + lifetimes.idleMs);
}

/** The session a sign-in of `user` at `nowMs` starts. Pure. */
export function startSession(
  user: Pick<UserRecord, 'username' | 'subject'>,
  nowMs: number,
  lifetimes: SessionLifetimes,
): PortalSession {
  return {
    username: user.username,
    subject: user.subject,
    createdAtMs: nowMs,
    lastSeenMs: nowMs,
    endsAtMs: endOfSession(nowMs, nowMs, lifetimes),
  };
}

/**
 * Whether the session still stands at `nowMs` under today's lifetimes: its stored end, and the
 * ends the lifetimes give now (shortened by a reload, they apply at once), all still ahead.
 */
export function isLive(
  session: PortalSession,
  nowMs: number,
  lifetimes: SessionLifetimes,
): boolean {
  const end = Math.min(
    session.endsAtMs,
    endOfSession(session.createdAtMs, session.lastSeenMs, lifetimes),
  );
  return nowMs < end;
}

/**
 * The session seen again at `nowMs`, its idle end moved on (never past the absolute one);
 * undefined when it was written less than SEEN_WRITE_INTERVAL_MS ago (nothing to write).
 */
export function seenAgain(
  session: PortalSession,
  nowMs: number,
  lifetimes: SessionLifetimes,
): PortalSession | undefined {
  if (nowMs - session.lastSeenMs < SEEN_WRITE_INTERVAL_MS) return undefined;
  return {
    ...session,
    lastSeenMs: nowMs,
    endsAtMs: endOfSession(session.createdAtMs, nowMs, lifetimes),
  };
}

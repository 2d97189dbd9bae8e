import { describe, expect, it } from 'vitest';
import {
  isLive,
  SEEN_WRITE_INTERVAL_MS,
  seenAgain,
  startSession,
} from '../../../src/portal/session-lifetimes.js';

const MINUTE_MS = 60_000;
const lifetimes = { idleMs: 30 * MINUTE_MS, absoluteMs: 12 * 60 * MINUTE_MS };
const T0 = Date.parse('2026-01-01T08:00:00.000Z');
const user = { username: 'alice', subject: 'alice-subject' };

describe('a session’s lifetimes', () => {
  it('starts at sign-in and ends after the idle lifetime when not seen again', () => {
    const session = startSession(user, T0, lifetimes);
    expect(session).toEqual({
      username: 'alice',
      subject: 'alice-subject',
      createdAtMs: T0,
      lastSeenMs: T0,
      endsAtMs: T0 + 30 * MINUTE_MS,
    });
    expect(isLive(session, T0 + 30 * MINUTE_MS - 1, lifetimes)).toBe(true);
    expect(isLive(session, T0 + 30 * MINUTE_MS, lifetimes)).toBe(false);
  });

  it('moves its idle end on when seen again, writing at most once a minute', () => {
    const session = startSession(user, T0, lifetimes);
    expect(seenAgain(session, T0 + SEEN_WRITE_INTERVAL_MS - 1, lifetimes)).toBeUndefined();
    const seen = seenAgain(session, T0 + 20 * MINUTE_MS, lifetimes);
    expect(seen).toEqual({
      ...session,
      lastSeenMs: T0 + 20 * MINUTE_MS,
      endsAtMs: T0 + 50 * MINUTE_MS,
    });
    if (seen === undefined) throw new Error('unreachable');
    expect(isLive(seen, T0 + 49 * MINUTE_MS, lifetimes)).toBe(true);
  });

  it('ends at the absolute lifetime however often it is seen', () => {
    let session = startSession(user, T0, lifetimes);
    for (let at = T0 + 20 * MINUTE_MS; at < T0 + 12 * 60 * MINUTE_MS; at += 20 * MINUTE_MS)
      session = seenAgain(session, at, lifetimes) ?? session;
    expect(session.endsAtMs).toBe(T0 + 12 * 60 * MINUTE_MS);
    expect(isLive(session, T0 + 12 * 60 * MINUTE_MS - 1, lifetimes)).toBe(true);
    expect(isLive(session, T0 + 12 * 60 * MINUTE_MS, lifetimes)).toBe(false);
  });

  it('ends at once when the lifetimes are shortened, whatever end it was given', () => {
    const session = startSession(user, T0, lifetimes);
    const shorter = { idleMs: 5 * MINUTE_MS, absoluteMs: 60 * MINUTE_MS };
    expect(isLive(session, T0 + 6 * MINUTE_MS, shorter)).toBe(false);
    expect(isLive(session, T0 + 4 * MINUTE_MS, shorter)).toBe(true);
  });
});

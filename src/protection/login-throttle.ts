import { LRUCache } from 'lru-cache';
import type { LoginConfig } from '../config/config-schema.js';

export interface ThrottleRefusal {
  readonly kind: 'refuse';
  readonly retryAfterSec: number;
}

export type ThrottleDecision =
  | { readonly kind: 'allow'; readonly delayMs: number; readonly attempt: LoginAttempt }
  | ThrottleRefusal;

/**
 * How a password check ended: `error` means no verdict was reached (store down, bcrypt
 * overloaded), so no guess was spent.
 */
export type LoginOutcome = 'success' | 'failure' | 'error';

/** One password check, counted against the limits from `begin` until it is settled. */
export interface LoginAttempt {
  /** Idempotent: only the first call counts. */
  settle(outcome: LoginOutcome): void;
}

export interface LoginThrottle {
  /**
   * Before anything of the request is read: refuses an address already at its limit, so a
   * throttled client is not invited (`100 Continue`) to upload its body. Reserves nothing.
   */
  checkAddress(address: string): ThrottleRefusal | undefined;
  /**
   * Before a password check: refuses outright, or reserves an attempt for the username and
   * the address, to wait `delayMs` and then settle. A success clears the username's
   * failures (not the address's).
   */
  begin(username: string, address: string): ThrottleDecision;
}

interface Window {
  /** When the first failure of the window was recorded. */
  startedAt: number;
  failures: number;
  /** Attempts begun and not settled yet. */
  pending: number;
}

const MAX_DELAY_MS = 5_000;

/**
 * Counts failed password exchanges per username and per client address in a fixed window.
 * Unknown usernames are counted like known ones, so the answers never tell them apart.
 *
 * An attempt counts against the limits from the moment it is allowed, not only once bcrypt
 * has said no: otherwise a burst of parallel guesses all pass the check before the first
 * failure is recorded, and both the slow-down and `maxFailures` are sidestepped.
 * Per process, like the rest of the gateway's in-memory state.
 */
export function createLoginThrottle(
  config: LoginConfig,
  now: () => number = Date.now,
): LoginThrottle {
  const windows = new LRUCache<string, Window>({ max: config.maxTrackedClients });
  const windowMs = config.windowSec * 1000;

  const current = (id: string): Window | undefined => {
    const found = windows.get(id);
    if (found !== undefined && found.failures > 0 && now() - found.startedAt >= windowMs) {
      found.failures = 0;
    }
    if (found !== undefined && found.failures === 0 && found.pending === 0) {
      windows.delete(id);
      return undefined;
    }
    return found;
  };
  const counted = (found: Window | undefined): number =>
    found === undefined ? 0 : found.failures + found.pending;

  const refusal = (found: Window | undefined): ThrottleRefusal | undefined => {
    if (found === undefined || counted(found) < config.maxFailures) return undefined;
    // Attempts still pending may end in failures that start the window only now.
    const startedAt = found.failures > 0 ? found.startedAt : now();
    return {
      kind: 'refuse',
      retryAfterSec: Math.max(1, Math.ceil((startedAt + windowMs - now()) / 1000)),
    };
  };

  const reserve = (id: string): void => {
    const found = current(id);
    // startedAt is set again by the first failure; until then the window only holds pending.
    if (found === undefined) windows.set(id, { startedAt: now(), failures: 0, pending: 1 });
    else found.pending += 1;
  };

  const settle = (id: string, outcome: LoginOutcome): void => {
    // Looked up again rather than held: the window may have expired (or been evicted from
    // the LRU) meanwhile, and a failure belongs to the window current when it happened.
    const found = current(id) ?? { startedAt: now(), failures: 0, pending: 1 };
    found.pending = Math.max(0, found.pending - 1);
    if (outcome === 'failure') {
      if (found.failures === 0) found.startedAt = now();
      found.failures += 1;
    }
    if (found.failures === 0 && found.pending === 0) windows.delete(id);
    else windows.set(id, found);
  };

  return {
    checkAddress(address) {
      return refusal(current(`a:${address}`));
    },
    begin(username, address) {
      const ids = [`u:${username}`, `a:${address}`] as const;
      const found = ids.map(current);
      // Both limits must have cleared before a retry can pass: tell the longer wait.
      const refused = found
        .map(refusal)
        .reduce<ThrottleRefusal | undefined>(
          (a, b) =>
            b !== undefined && (a === undefined || b.retryAfterSec > a.retryAfterSec) ? b : a,
          undefined,
        );
      if (refused !== undefined) return refused;
      const beyond = Math.max(...found.map(counted)) - config.slowAfterFailures;
      for (const id of ids) reserve(id);
      let settled = false;
      return {
        kind: 'allow',
        delayMs: beyond > 0 ? Math.min(beyond * config.delayMs, MAX_DELAY_MS) : 0,
        attempt: {
          settle(outcome) {
            if (settled) return;
            settled = true;
            if (outcome === 'success') {
              const user = current(ids[0]);
              if (user !== undefined) user.failures = 0;
            }
            for (const id of ids) settle(id, outcome);
          },
        },
      };
    },
  };
}

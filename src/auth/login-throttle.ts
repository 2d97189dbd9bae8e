import { LRUCache } from 'lru-cache';
import type { LoginConfig } from '../config/config-schema.js';

export type ThrottleDecision =
  | { readonly kind: 'allow'; readonly delayMs: number }
  | { readonly kind: 'refuse'; readonly retryAfterSec: number };

export interface LoginThrottle {
  /** Before a password check: how long to wait first, or refuse outright. */
  check(username: string, address: string): ThrottleDecision;
  recordFailure(username: string, address: string): void;
  /** A right password clears the username's failures (not the address's). */
  recordSuccess(username: string): void;
}

interface Window {
  startedAt: number;
  failures: number;
}

const MAX_DELAY_MS = 5_000;

/**
 * Counts failed password exchanges per username and per client address in a fixed window.
 * Unknown usernames are counted like known ones, so the answers never tell them apart.
 */
export function createLoginThrottle(
  config: LoginConfig,
  now: () => number = Date.now,
): LoginThrottle {
  const windows = new LRUCache<string, Window>({ max: config.maxTrackedClients });
  const windowMs = config.windowSec * 1000;
  const current = (id: string): Window | undefined => {
    const found = windows.get(id);
    if (found !== undefined && now() - found.startedAt >= windowMs) {
      windows.delete(id);
      return undefined;
    }
    return found;
  };
  const fail = (id: string): void => {
    const found = current(id);
    if (found === undefined) windows.set(id, { startedAt: now(), failures: 1 });
    else found.failures += 1;
  };
  return {
    check(username, address) {
      const worst = [current(`u:${username}`), current(`a:${address}`)].reduce<Window | undefined>(
        (a, b) => (b !== undefined && (a === undefined || b.failures > a.failures) ? b : a),
        undefined,
      );
      if (worst === undefined) return { kind: 'allow', delayMs: 0 };
      if (worst.failures >= config.maxFailures) {
        return {
          kind: 'refuse',
          retryAfterSec: Math.max(1, Math.ceil((worst.startedAt + windowMs - now()) / 1000)),
        };
      }
      const beyond = worst.failures - config.slowAfterFailures;
      return {
        kind: 'allow',
        delayMs: beyond > 0 ? Math.min(beyond * config.delayMs, MAX_DELAY_MS) : 0,
      };
    },
    recordFailure(username, address) {
      fail(`u:${username}`);
      fail(`a:${address}`);
    },
    recordSuccess(username) {
      windows.delete(`u:${username}`);
    },
  };
}

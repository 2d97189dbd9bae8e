import type { LockoutConfig } from '../config/config-schema.js';
import type { ClientAddress } from '../identity/client-address.js';
import type { LockoutLimit } from './lockout-policy.js';

/**
 * What a failed attempt is counted against. `basic`: a key/secret pair; `token`: a
 * username/password at `POST /auth/token`. `id` is the key or username exactly as sent:
 * an unknown one is counted (and locked out) exactly like a known one. The counters count
 * the client's network; the log lines show its address.
 */
export interface LockoutTarget extends ClientAddress {
  readonly kind: 'basic' | 'token';
  readonly id: string;
}

/** The counters of a target; the second is the one a success clears. */
export const LOCKOUT_SCOPES = {
  basic: ['basic_address', 'basic_key_address', 'basic_key'],
  token: ['token_address', 'token_username_address', 'token_username'],
} as const;

export type LockoutScope = (typeof LOCKOUT_SCOPES)[keyof typeof LOCKOUT_SCOPES][number];

/**
 * How an attempt ended: `error` means no verdict was reached (store down, bcrypt
 * overloaded), so no guess was spent and the reservation is given back.
 */
export type AttemptOutcome = 'success' | 'failure' | 'error';

/** A lock a failure has just started: what the lockout log line and metric report. */
export interface LockStarted {
  readonly scope: LockoutScope;
  readonly lockSec: number;
  readonly failures: number;
}

export interface LockoutRefusal {
  readonly kind: 'refuse';
  /** The counter that refuses longest, and how long. */
  readonly scope: LockoutScope;
  readonly retryAfterSec: number;
  /**
   * True when that counter is locked: a lock only grows while it holds, so the refusal may be
   * remembered until it ends. False when only the attempts in flight refuse (they would reach
   * the threshold): their outcome, a success say, may free the counter at any moment.
   */
  readonly locked: boolean;
}

/** One attempt, counted against every counter of its target from `begin` until settled. */
export interface LockoutAttempt {
  /** Idempotent: only the first call counts. Rejects when the store cannot answer. */
  settle(outcome: AttemptOutcome): Promise<readonly LockStarted[]>;
}

export type LockoutDecision =
  { readonly kind: 'allow'; readonly attempt: LockoutAttempt } | LockoutRefusal;

export interface Lockout {
  /**
   * One atomic step before any credential is read or compared: refuses while any counter of
   * the target is locked (or its attempts in flight would lock it), else reserves the attempt
   * on all of them. Rejects only when the store cannot answer (503).
   */
  begin(target: LockoutTarget): Promise<LockoutDecision>;
  /**
   * Whether the address counter of a client network alone refuses, reserving nothing: for the
   * token endpoint to refuse before reading a body it would otherwise invite with `100 Continue`.
   */
  checkAddress(kind: LockoutTarget['kind'], network: string): Promise<LockoutRefusal | undefined>;
}

/**
 * One counter, by what it counts; each store names (and keeps) it its own way. `id` is the key
 * or username as sent ('' for an address counter), `network` the client's network ('' for a
 * key-wide or username-wide counter).
 */
export interface LockoutCounter {
  readonly scope: LockoutScope;
  readonly id: string;
  readonly network: string;
}

/** The three counters of a target, in LOCKOUT_SCOPES order. */
export function countersOf(
  target: Pick<LockoutTarget, 'kind' | 'id' | 'network'>,
): readonly [LockoutCounter, LockoutCounter, LockoutCounter] {
  const { kind, id, network } = target;
  const [address, idAddress, wide] = LOCKOUT_SCOPES[kind];
  return [
    { scope: address, id: '', network },
    { scope: idAddress, id, network },
    { scope: wide, id, network: '' },
  ];
}

/**
 * A counter as one string, for a map in this process. Keys and usernames never contain `:`
 * (a Basic key ends at the first colon; usernames are checked) and the network comes last,
 * so no two counters share one even for an IPv6 network.
 */
export function counterKey(counter: LockoutCounter): string {
  return `${counter.scope}:${counter.id}:${counter.network}`;
}

/** The limits of a target's three counters, in LOCKOUT_SCOPES order. */
export function counterLimits(
  config: LockoutConfig,
  kind: LockoutTarget['kind'],
): readonly [LockoutLimit, LockoutLimit, LockoutLimit] {
  const limit = (l: { threshold: number; maxLockSec: number }): LockoutLimit => ({
    threshold: l.threshold,
    initialLockMs: config.initialLockSec * 1000,
    maxLockMs: Math.max(config.initialLockSec, l.maxLockSec) * 1000,
  });
  return kind === 'basic'
    ? [limit(config.basic.address), limit(config.basic.keyAddress), limit(config.basic.key)]
    : [
        limit(config.token.address),
        limit(config.token.usernameAddress),
        limit(config.token.username),
      ];
}

export function toRetryAfterSec(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/**
 * A lockout lifted by an operator (`keys unlock`): every counter of a key or of a username
 * (whatever the network), or the address counters of a client network (Basic and token).
 */
export type Unlock =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'username'; readonly username: string }
  | { readonly kind: 'address'; readonly network: string };

/**
 * The counters an unlock clears: `exact` as they are, and for `anyNetwork` (network '') the
 * counter of every network. counterKey() of an `anyNetwork` counter is the prefix of all of
 * theirs, since the network comes last and ids never contain `:`.
 */
export function unlockedCounters(unlock: Unlock): {
  readonly exact: readonly LockoutCounter[];
  readonly anyNetwork: readonly LockoutCounter[];
} {
  switch (unlock.kind) {
    case 'key':
    case 'username': {
      const id = unlock.kind === 'key' ? unlock.key : unlock.username;
      const [, idAddress, wide] = countersOf({
        kind: unlock.kind === 'key' ? 'basic' : 'token',
        id,
        network: '',
      });
      return { exact: [wide], anyNetwork: [idAddress] };
    }
    case 'address': {
      const of = (kind: LockoutTarget['kind']) =>
        countersOf({ kind, id: '', network: unlock.network })[0];
      return { exact: [of('basic'), of('token')], anyNetwork: [] };
    }
  }
}

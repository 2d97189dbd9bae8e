/**
 * What each script of scripts/ answers, as a typed value: one decoder per script (scripts.ts),
 * applied once where the reply enters (run-script.ts), so no caller casts a reply.
 *
 * A reply of another shape is a bug of ours or a foreign server on the port, never an outage:
 * it throws MalformedReplyError, which names the position and the kind of value found but
 * none of the reply's text, and is never coerced into an answer. ioredis gives a Lua number
 * as an integer, a string as a string, a table as an array and false or nil in a table as null.
 */

export class MalformedReplyError extends Error {
  override readonly name = 'MalformedReplyError';
}

/** What a value is, for an error message: its kind, never its text. */
const kindOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? `an array of ${value.length}` : typeof value;

const malformed = (at: string, expected: string, value: unknown): MalformedReplyError =>
  new MalformedReplyError(`malformed reply: ${at} should be ${expected}, is ${kindOf(value)}`);

function list(value: unknown, at = 'the reply'): readonly unknown[] {
  if (!Array.isArray(value)) throw malformed(at, 'an array', value);
  return value;
}

function integer(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw malformed(at, 'an integer', value);
  return value;
}

function text(value: unknown, at: string): string {
  if (typeof value !== 'string') throw malformed(at, 'a string', value);
  return value;
}

/** A number the script formats as text (%.0f) so that Lua does not round it. */
function decimal(value: unknown, at: string): number {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value))
    throw malformed(at, 'a decimal integer as text', value);
  return Number(value);
}

/** One of `codes` (an integer or a string the script answers), as its name. */
function oneOf<Code extends number | string, Name>(
  value: unknown,
  at: string,
  codes: ReadonlyMap<Code, Name>,
): Name {
  for (const [code, name] of codes) if (code === value) return name;
  throw malformed(at, `one of ${[...codes.keys()].join(', ')}`, value);
}

const YES_NO = new Map([
  [1, true],
  [0, false],
]);

/** `return 1` / `return 0`: whether the script did what it does. */
export function decodeFlag(reply: unknown): boolean {
  return oneOf(reply, 'the reply', YES_NO);
}

/** replace-hash.lua: -1 no such hash, 0 the field held another value, 1 replaced. */
export type ReplaceOutcome = 'absent' | 'other' | 'replaced';
const REPLACE = new Map<number, ReplaceOutcome>([
  [-1, 'absent'],
  [0, 'other'],
  [1, 'replaced'],
]);
export const decodeReplace = (reply: unknown): ReplaceOutcome => oneOf(reply, 'the reply', REPLACE);

/** record-last-use.lua: the positions (1-based) of the hashes that do not exist. */
export function decodePositions(reply: unknown): readonly number[] {
  return list(reply).map((value, i) => {
    const position = integer(value, `[${i}]`);
    if (position < 1) throw malformed(`[${i}]`, 'a position from 1', value);
    return position;
  });
}

/**
 * A pair script's answer (scripts/pair-index.lua): the hashes it needs declared on its next
 * run, or `done` and what follows.
 */
export type PairReply<Done> =
  | { readonly kind: 'need'; readonly ids: readonly string[] }
  | { readonly kind: 'done'; readonly value: Done };

/** The decoder of a pair script whose `{ 'done', ... }` tail `done` decodes. */
export function pairReply<Done>(
  done: (rest: readonly unknown[]) => Done,
): (reply: unknown) => PairReply<Done> {
  return (reply) => {
    const [head, ...rest] = list(reply);
    if (head === 'need') return { kind: 'need', ids: rest.map((id, i) => text(id, `[${i + 1}]`)) };
    if (head === 'done') return { kind: 'done', value: done(rest) };
    throw malformed('[0]', "'need' or 'done'", head);
  };
}

/** The one value after 'done'. */
function single(rest: readonly unknown[]): unknown {
  if (rest.length !== 1) throw malformed('the reply', "'done' and one value", rest);
  return rest[0];
}

/** create-pair.lua: 1 created, 0 the id is taken, -1 the subject is at its cap. */
export type CreateOutcome = 'created' | 'exists' | 'at-cap';
const CREATE = new Map<number, CreateOutcome>([
  [1, 'created'],
  [0, 'exists'],
  [-1, 'at-cap'],
]);
export const decodeCreate = pairReply((rest) => oneOf(single(rest), '[1]', CREATE));

/** revoke-pair.lua: 1 revoked, 0 no such pair, -1 it is the last usable one (kept). */
export type RevokeOutcome = 'revoked' | 'absent' | 'last-active';
const REVOKE = new Map<number, RevokeOutcome>([
  [1, 'revoked'],
  [0, 'absent'],
  [-1, 'last-active'],
]);
export const decodeRevoke = pairReply((rest) => oneOf(single(rest), '[1]', REVOKE));

/**
 * roll-pair.lua: rolled, with the label, scopes and expiry the successor copied ('' for
 * none), or why not: no such pair of the subject, ended, the others at the cap, the new id taken.
 */
export type RollOutcome =
  | {
      readonly kind: 'rolled';
      readonly label: string;
      readonly scopes: string;
      readonly expiresAt: string;
    }
  | { readonly kind: 'absent' | 'ended' | 'at-cap' | 'taken' };
const ROLL_REFUSALS = new Map<number, 'absent' | 'ended' | 'at-cap' | 'taken'>([
  [0, 'absent'],
  [-1, 'ended'],
  [-2, 'at-cap'],
  [-3, 'taken'],
]);
export const decodeRoll = pairReply((rest): RollOutcome => {
  const [code, ...copied] = rest;
  if (code !== 1) {
    if (copied.length > 0) throw malformed('the reply', "'done' and one refusal", rest);
    return { kind: oneOf(code, '[1]', ROLL_REFUSALS) };
  }
  if (copied.length !== 3) throw malformed('the reply', "'done', 1 and three fields", rest);
  return {
    kind: 'rolled',
    label: text(copied[0], '[2]'),
    scopes: text(copied[1], '[3]'),
    expiresAt: text(copied[2], '[4]'),
  };
});

/** count-active-pairs.lua: the number of usable pairs. */
export const decodeCount = pairReply((rest) => {
  const count = integer(single(rest), '[1]');
  if (count < 0) throw malformed('[1]', 'a count', count);
  return count;
});

/** revoke-subject-pairs.lua: the ids revoked. */
export const decodeIds = pairReply((rest) => rest.map((id, i) => text(id, `[${i + 1}]`)));

/** adopt-pair.lua: what taking in a pair moved from the single slot did. */
export type AdoptOutcome = 'moved' | 'merged' | 'same' | 'taken' | 'fragment';
const ADOPT = new Map<string, AdoptOutcome>(
  (['moved', 'merged', 'same', 'taken', 'fragment'] as const).map((o) => [o, o]),
);
export const decodeAdopt = pairReply((rest) => oneOf(single(rest), '[1]', ADOPT));

/** One pair of a listing: its id and the values of the fields asked for, in their order. */
export interface ListedPair {
  readonly id: string;
  readonly values: readonly (string | null)[];
}

/**
 * list-pairs.lua: the page's pairs, or undefined when the pair it starts after is not in the
 * index (`{ 'done', 0 }`).
 */
export const decodeListing = pairReply((rest): readonly ListedPair[] | undefined => {
  const [found, ...entries] = rest;
  if (found === 0 && entries.length === 0) return undefined;
  if (found !== 1) throw malformed('[1]', '1, or 0 alone', found);
  if (entries.length % 2 !== 0) throw malformed('the reply', 'id and values in pairs', rest);
  const pairs: ListedPair[] = [];
  for (let i = 0; i < entries.length; i += 2) {
    const at = i + 2;
    const values = list(entries[i + 1], `[${at + 1}]`).map((value, j) => {
      if (value !== null && typeof value !== 'string')
        throw malformed(`[${at + 1}][${j}]`, 'a string or null', value);
      return value;
    });
    pairs.push({ id: text(entries[i], `[${at}]`), values });
  }
  return pairs;
});

/** A refusal of lockout.lua's begin or check: the counter (1-based in the run), how long. */
export interface LockoutRefusalReply {
  readonly index: number;
  readonly waitMs: number;
  /** The counter is locked; false: only the attempts in flight on it refuse. */
  readonly locked: boolean;
}

/** A lock a failure started: the counter (1-based in the run), its length, the failures. */
export interface LockoutLockReply {
  readonly index: number;
  readonly lockMs: number;
  readonly failures: number;
}

/** lockout.lua, by its op: a begin's or check's refusal, or the locks a failure started. */
export interface LockoutReply {
  readonly refused: LockoutRefusalReply | undefined;
  readonly locks: readonly LockoutLockReply[];
}

/**
 * lockout.lua answers begin and check with {0} (allowed) or {1, index, waitMs, locked}, a
 * failure with {index, lockMs, failures} per lock started, success and error with {}.
 */
export function decodeLockout(
  reply: unknown,
  sent: { readonly args: { readonly op: string | number } },
): LockoutReply {
  const values = list(reply).map((value, i) => integer(value, `[${i}]`));
  const { op } = sent.args;
  if (op === 'begin' || op === 'check') {
    const [refused, index = 0, waitMs = 0, locked = 0] = values;
    if (refused === 0 && values.length === 1) return { refused: undefined, locks: [] };
    if (refused !== 1 || values.length !== 4 || index < 1)
      throw malformed('the reply', '{0} or {1, index, waitMs, locked}', reply);
    return { refused: { index, waitMs, locked: locked === 1 }, locks: [] };
  }
  if (values.length % 3 !== 0 || (op !== 'failure' && values.length > 0))
    throw malformed('the reply', `what ${String(op)} answers`, reply);
  const locks: LockoutLockReply[] = [];
  for (let i = 0; i < values.length; i += 3) {
    const [index = 0, lockMs = 0, failures = 0] = values.slice(i, i + 3);
    if (index < 1) throw malformed(`[${i}]`, 'a counter from 1', index);
    locks.push({ index, lockMs, failures });
  }
  return { refused: undefined, locks };
}

/** One bucket of take-buckets.lua; `requests` 0: the bucket has no policy. */
export interface BucketReply {
  readonly requests: number;
  readonly periodSec: number;
  readonly burst: number;
  readonly remaining: number;
  readonly waitUs: number;
  readonly granted: number;
}

/** take-buckets.lua: the verdict, each bucket in the order sent, and the overrides it refused. */
export interface TakeBucketsReply {
  readonly allowed: boolean;
  readonly retryAfterUs: number;
  readonly buckets: readonly BucketReply[];
  /** Each override whose value is no rate limit: its position (1-based) and value's start. */
  readonly malformed: readonly { readonly override: number; readonly value: string }[];
}

/**
 * take-buckets.lua answers { allowed, retryAfterUs, then per bucket requests, periodSec,
 * burst, remaining, waitUs, granted, then per malformed override its number and value }: how many
 * buckets come first is how many were sent.
 */
export function decodeTakeBuckets(
  reply: unknown,
  sent: { readonly keys: { readonly buckets: readonly string[] } },
): TakeBucketsReply {
  const values = list(reply);
  const count = sent.keys.buckets.length;
  const tail = values.length - 2 - count * 6;
  if (tail < 0 || tail % 2 !== 0)
    throw malformed('the reply', `2 values, 6 per each of ${count} buckets, then pairs`, reply);
  const buckets: BucketReply[] = [];
  for (let i = 0; i < count; i += 1) {
    const at = 2 + i * 6;
    buckets.push({
      requests: integer(values[at], `[${at}]`),
      periodSec: integer(values[at + 1], `[${at + 1}]`),
      burst: integer(values[at + 2], `[${at + 2}]`),
      remaining: integer(values[at + 3], `[${at + 3}]`),
      waitUs: decimal(values[at + 4], `[${at + 4}]`),
      granted: integer(values[at + 5], `[${at + 5}]`),
    });
  }
  const malformedOverrides: { override: number; value: string }[] = [];
  for (let at = 2 + count * 6; at < values.length; at += 2)
    malformedOverrides.push({
      override: integer(values[at], `[${at}]`),
      value: text(values[at + 1], `[${at + 1}]`),
    });
  return {
    allowed: oneOf(values[0], '[0]', YES_NO),
    retryAfterUs: decimal(values[1], '[1]'),
    buckets,
    malformed: malformedOverrides,
  };
}

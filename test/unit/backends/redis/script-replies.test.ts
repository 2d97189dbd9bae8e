import { describe, expect, it } from 'vitest';
import {
  decodeAdopt,
  decodeCount,
  decodeCreate,
  decodeFlag,
  decodeIds,
  decodeListing,
  decodeLockout,
  decodePositions,
  decodeReplace,
  decodeRevoke,
  decodeRoll,
  decodeTakeBuckets,
  MalformedReplyError,
} from '../../../../src/backends/redis/script-replies.js';
import { ALL_SCRIPTS } from '../../../../src/backends/redis/scripts.js';

// Each script's reply as ioredis gives it (a Lua number an integer, a table an array, false or
// nil in a table null), decoded once where it enters; any other shape is refused, not coerced.

const malformed = (decode: () => unknown) => expect(decode).toThrowError(MalformedReplyError);
const op = (name: string) => ({ args: { op: name } });
const buckets = (count: number) => ({ keys: { buckets: Array.from({ length: count }, String) } });

describe('the decoders of the Redis scripts’ replies', () => {
  it('gives every script a decoder', () => {
    expect(ALL_SCRIPTS.filter((script) => typeof script.reply !== 'function')).toEqual([]);
  });

  it('reads a 1 or 0 as whether the script did it, and refuses any other value', () => {
    expect(decodeFlag(1)).toBe(true);
    expect(decodeFlag(0)).toBe(false);
    malformed(() => decodeFlag(2));
    malformed(() => decodeFlag('1'));
    malformed(() => decodeFlag(null));
  });

  it("reads replace-hash.lua's -1, 0 and 1 as absent, other and replaced", () => {
    expect([-1, 0, 1].map(decodeReplace)).toEqual(['absent', 'other', 'replaced']);
    malformed(() => decodeReplace(-2));
  });

  it('reads the positions record-last-use.lua found no hash at, from 1', () => {
    expect(decodePositions([])).toEqual([]);
    expect(decodePositions([1, 3])).toEqual([1, 3]);
    malformed(() => decodePositions([0]));
    malformed(() => decodePositions(['1']));
    malformed(() => decodePositions(1));
  });

  it("reads a pair script's 'need' as the ids whose hashes to declare next", () => {
    expect(decodeCreate(['need', 'ak_a', 'ak_b'])).toEqual({ kind: 'need', ids: ['ak_a', 'ak_b'] });
    expect(decodeCount(['need'])).toEqual({ kind: 'need', ids: [] });
    malformed(() => decodeCreate(['need', 7]));
    malformed(() => decodeCreate(['maybe', 1]));
    malformed(() => decodeCreate([]));
  });

  it("reads what follows a pair script's 'done'", () => {
    expect([1, 0, -1].map((code) => decodeCreate(['done', code]))).toEqual([
      { kind: 'done', value: 'created' },
      { kind: 'done', value: 'exists' },
      { kind: 'done', value: 'at-cap' },
    ]);
    expect([1, 0, -1].map((code) => decodeRevoke(['done', code]))).toEqual([
      { kind: 'done', value: 'revoked' },
      { kind: 'done', value: 'absent' },
      { kind: 'done', value: 'last-active' },
    ]);
    expect(decodeCount(['done', 3])).toEqual({ kind: 'done', value: 3 });
    expect(decodeIds(['done', 'ak_a', 'ak_b'])).toEqual({ kind: 'done', value: ['ak_a', 'ak_b'] });
    expect(decodeAdopt(['done', 'merged'])).toEqual({ kind: 'done', value: 'merged' });
  });

  it("reads roll-pair.lua's fields the successor copied, or why it made none", () => {
    expect(decodeRoll(['done', 1, 'ci', 'keys read', ''])).toEqual({
      kind: 'done',
      value: { kind: 'rolled', label: 'ci', scopes: 'keys read', expiresAt: '' },
    });
    expect([0, -1, -2, -3].map((code) => decodeRoll(['done', code]))).toEqual(
      ['absent', 'ended', 'at-cap', 'taken'].map((kind) => ({ kind: 'done', value: { kind } })),
    );
    malformed(() => decodeRoll(['done', 1, 'ci', 'keys']));
    malformed(() => decodeRoll(['done', 1, 'ci', 'keys', null]));
    malformed(() => decodeRoll(['done', 0, 'ci']));
    malformed(() => decodeRoll(['done', -4]));
  });

  it("refuses a pair script's 'done' with a value of another shape", () => {
    malformed(() => decodeCreate(['done', 2]));
    malformed(() => decodeCreate(['done']));
    malformed(() => decodeCreate(['done', 1, 1]));
    malformed(() => decodeCount(['done', -1]));
    malformed(() => decodeCount(['done', '3']));
    malformed(() => decodeIds(['done', 'ak_a', 1]));
    malformed(() => decodeAdopt(['done', 'stolen']));
  });

  it("reads list-pairs.lua's page as ids with their values, and 0 as a start not in the index", () => {
    expect(decodeListing(['done', 0])).toEqual({ kind: 'done', value: undefined });
    expect(decodeListing(['done', 1])).toEqual({ kind: 'done', value: [] });
    expect(decodeListing(['done', 1, 'ak_a', ['s', null], 'ak_b', []])).toEqual({
      kind: 'done',
      value: [
        { id: 'ak_a', values: ['s', null] },
        { id: 'ak_b', values: [] },
      ],
    });
  });

  it('refuses a listing of another shape', () => {
    malformed(() => decodeListing(['done', 0, 'ak_a', []]));
    malformed(() => decodeListing(['done', 1, 'ak_a']));
    malformed(() => decodeListing(['done', 1, 'ak_a', 's']));
    malformed(() => decodeListing(['done', 1, 'ak_a', [1]]));
    malformed(() => decodeListing(['done', 1, 2, []]));
  });

  it("reads lockout.lua's answer to a begin or check as allowed or the counter that refuses", () => {
    expect(decodeLockout([0], op('begin'))).toEqual({ refused: undefined, locks: [] });
    expect(decodeLockout([1, 2, 1500, 1], op('check'))).toEqual({
      refused: { index: 2, waitMs: 1500, locked: true },
      locks: [],
    });
    malformed(() => decodeLockout([], op('begin')));
    malformed(() => decodeLockout([1, 2], op('begin')));
    malformed(() => decodeLockout([2], op('check')));
    malformed(() => decodeLockout([1, 0, 10, 0], op('begin')));
  });

  it("reads lockout.lua's answer to a settle as the locks a failure started", () => {
    expect(decodeLockout([1, 60000, 5, 3, 120000, 10], op('failure'))).toEqual({
      refused: undefined,
      locks: [
        { index: 1, lockMs: 60000, failures: 5 },
        { index: 3, lockMs: 120000, failures: 10 },
      ],
    });
    expect(decodeLockout([], op('success'))).toEqual({ refused: undefined, locks: [] });
    expect(decodeLockout([], op('error'))).toEqual({ refused: undefined, locks: [] });
    malformed(() => decodeLockout([1, 60000], op('failure')));
    malformed(() => decodeLockout([1, 60000, 5], op('success')));
    malformed(() => decodeLockout(['1', 60000, 5], op('failure')));
  });

  it("reads take-buckets.lua's verdict, each bucket sent and the overrides it refused", () => {
    expect(
      decodeTakeBuckets(
        [0, '250000', 10, 60, 10, 0, '250000', 0, 0, 0, 0, 0, '0', 0, 1, 'lots/s'],
        buckets(2),
      ),
    ).toEqual({
      allowed: false,
      retryAfterUs: 250000,
      buckets: [
        { requests: 10, periodSec: 60, burst: 10, remaining: 0, waitUs: 250000, granted: 0 },
        { requests: 0, periodSec: 0, burst: 0, remaining: 0, waitUs: 0, granted: 0 },
      ],
      malformed: [{ override: 1, value: 'lots/s' }],
    });
    expect(decodeTakeBuckets([1, '0'], buckets(0))).toEqual({
      allowed: true,
      retryAfterUs: 0,
      buckets: [],
      malformed: [],
    });
  });

  it('refuses a take of another shape than the buckets sent', () => {
    expect(decodeTakeBuckets([1, '0', 10, 60, 10, 9, '0', 1], buckets(1)).buckets).toEqual([
      { requests: 10, periodSec: 60, burst: 10, remaining: 9, waitUs: 0, granted: 1 },
    ]);
    malformed(() => decodeTakeBuckets([1, '0', 10, 60, 10, 9, '0', 1], buckets(2)));
    malformed(() => decodeTakeBuckets([1, '0', 10, 60, 10, 9, '0', 1, 1], buckets(1)));
    malformed(() => decodeTakeBuckets([1, 0, 10, 60, 10, 9, '0', 1], buckets(1)));
    malformed(() => decodeTakeBuckets([1, '0', 10, 60, 10, 9, '1.5', 1], buckets(1)));
    malformed(() => decodeTakeBuckets([1, '0', 10, 60, 10, 9, '0', 'all'], buckets(1)));
    malformed(() => decodeTakeBuckets([2, '0'], buckets(0)));
  });

  it('names the position and the kind of value found, never the value', () => {
    expect(() => decodeIds(['done', 'ak_a', ['secret']])).toThrowError(
      'malformed reply: [2] should be a string, is an array of 1',
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  formatTraceparent,
  parseTraceparent,
  parseTracestate,
} from '../../../src/tracing/trace-context.js';

// The examples of W3C Trace Context level 1 §3.2.2.
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const VALID = `00-${TRACE_ID}-${PARENT_ID}-01`;

describe('parseTraceparent', () => {
  it('reads the trace id, parent id and sampled flag of a version 00 header', () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE_ID, parentId: PARENT_ID, flags: 1 });
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-00`)?.flags).toBe(0);
  });

  it('keeps the sampled and random flags and zeroes the bits no level defines', () => {
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-03`)?.flags).toBe(3);
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-ff`)?.flags).toBe(3);
  });

  it.each([
    ['nothing', undefined],
    ['an empty value', ''],
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
    ['an all-zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`],
    ['a long parent id', `00-${TRACE_ID}-${PARENT_ID}0-01`],
    ['a non-hex character', `00-${TRACE_ID.slice(0, 31)}g-${PARENT_ID}-01`],
    ['a one-digit flags field', `00-${TRACE_ID}-${PARENT_ID}-1`],
    ['non-hex flags', `00-${TRACE_ID}-${PARENT_ID}-0x`],
    ['another separator', `00_${TRACE_ID}_${PARENT_ID}_01`],
    ['version ff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
    ['a non-hex version', `0g-${TRACE_ID}-${PARENT_ID}-01`],
    ['version 00 with more after the flags', `${VALID}-what-the-future-holds`],
    ['version 00 with trailing space', `${VALID} `],
    ['two headers joined by Node', `${VALID}, ${VALID}`],
  ])('refuses %s', (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('reads a higher version by its first four fields, with or without more after them', () => {
    const expected = { traceId: TRACE_ID, parentId: PARENT_ID, flags: 1 };
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-01`)).toEqual(expected);
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-01-what-the-future-holds`)).toEqual(
      expected,
    );
  });

  it('refuses a higher version whose flags are followed by anything but a dash', () => {
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-01.what`)).toBeUndefined();
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-0`)).toBeUndefined();
  });
});

describe('formatTraceparent', () => {
  it('writes version 00 with two-digit flags', () => {
    expect(formatTraceparent(TRACE_ID, PARENT_ID, 1)).toBe(VALID);
    expect(formatTraceparent(TRACE_ID, PARENT_ID, 0)).toBe(`00-${TRACE_ID}-${PARENT_ID}-00`);
    expect(formatTraceparent(TRACE_ID, PARENT_ID, 3)).toBe(`00-${TRACE_ID}-${PARENT_ID}-03`);
  });

  it('round-trips through parseTraceparent', () => {
    expect(parseTraceparent(formatTraceparent(TRACE_ID, PARENT_ID, 2))).toEqual({
      traceId: TRACE_ID,
      parentId: PARENT_ID,
      flags: 2,
    });
  });
});

describe('parseTracestate', () => {
  it.each([
    ['one member', 'congo=t61rcWkgMzE'],
    ['two members with optional spaces', 'rojo=00f067aa0ba902b7 ,\tcongo=t61rcWkgMzE'],
    ['a multi-tenant key', 'fw529a3039@dt=ZmU'],
    ['a tenant id beginning with a digit', '1tenant@vendor=x'],
    ['empty members', 'a=1,,b=2,'],
    ['a value with inner spaces', 'a=one two'],
    ['32 members', Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(',')],
    ['two headers joined by Node', 'a=1, b=2'],
    ['a tab after a value', 'a=1\t,b=2'],
    ['a value beginning with a space', 'a= v'],
  ])('passes %s on as received', (_name, value) => {
    expect(parseTracestate(value)).toBe(value);
  });

  it.each([
    ['nothing', undefined],
    ['no member at all', ' , '],
    ['33 members', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')],
    ['a repeated key', 'a=1,a=2'],
    ['a member without =', 'congo'],
    ['an empty key', '=v'],
    ['an upper-case key', 'Congo=v'],
    ['a simple key beginning with a digit', '1congo=v'],
    ['a system id longer than 14', `t@${'a'.repeat(15)}=v`],
    ['a key longer than 256', `${'a'.repeat(257)}=v`],
    ['an empty value', 'a='],
    ['a value with =', 'a=b=c'],
    ['a value longer than 256', `a=${'v'.repeat(257)}`],
    ['a control character', 'a=v\u0001'],
    ['a non-ASCII character', 'a=vé'],
    ['a tab inside a value', 'a=v\tw'],
    ['a key with two @', 't@v@w=1'],
    ['an empty system id', 't@=1'],
    ['an empty tenant id', '@v=1'],
    ['a system id beginning with a digit', 't@1v=1'],
    ['a key cut by the end', 'a=1,b'],
  ])('drops a malformed list whole: %s', (_name, value) => {
    expect(parseTracestate(value)).toBeUndefined();
  });
});

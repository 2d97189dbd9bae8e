/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/, level 1, with the version rules
 * of level 2): the `traceparent` and `tracestate` request headers, parsed and formatted by
 * pure functions.
 */

/** A trace the request belongs to, and the span the gateway's work descends from. */
export interface TraceParent {
  /** 32 lower-case hex digits, not all zeros. */
  readonly traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zeros. */
  readonly parentId: string;
  /** The trace-flags byte (bit 0: sampled; level 2's bit 1: random trace id). */
  readonly flags: number;
}

/** Level 1 §3.2.2.5 and level 2 §3.2.2.5.2: the flags a participant passes on; others are zeroed. */
export const SAMPLED = 0x01;
export const RANDOM = 0x02;
const KNOWN_FLAGS = SAMPLED | RANDOM;

const HEADER_LENGTH = 55; // 2 + 1 + 32 + 1 + 16 + 1 + 2
const DASH = 0x2d;

/**
 * The `traceparent` value, or undefined when it does not count (then a new trace starts):
 * §3.2.2 (version 00 is exactly `00-<32 hex>-<16 hex>-<2 hex>`, lower case, neither id all
 * zeros) and §3.2.4 (a higher version is read by its first four fields: at least 55
 * characters, and after the flags either the end or `-`; version `ff` is invalid). Two
 * headers reach here joined by `, ` (Node's rule for repeated fields): never valid.
 */
export function parseTraceparent(value: string | undefined): TraceParent | undefined {
  if (value === undefined || value.length < HEADER_LENGTH) return undefined;
  const v0 = hexDigit(value.charCodeAt(0));
  const v1 = hexDigit(value.charCodeAt(1));
  if (v0 < 0 || v1 < 0 || (v0 === 15 && v1 === 15)) return undefined;
  if (
    v0 === 0 && v1 === 0
      ? value.length !== HEADER_LENGTH
      : value.length > HEADER_LENGTH && value.charCodeAt(HEADER_LENGTH) !== DASH
  )
    return undefined;
  if (value.charCodeAt(2) !== DASH || value.charCodeAt(35) !== DASH) return undefined;
  if (value.charCodeAt(52) !== DASH) return undefined;
  // One pass over each id: lower-case hex digits, and not every one of them zero.
  let traceBits = 0;
  for (let i = 3; i < 35; i++) {
    const digit = hexDigit(value.charCodeAt(i));
    if (digit < 0) return undefined;
    traceBits |= digit;
  }
  let parentBits = 0;
  for (let i = 36; i < 52; i++) {
    const digit = hexDigit(value.charCodeAt(i));
    if (digit < 0) return undefined;
    parentBits |= digit;
  }
  const f0 = hexDigit(value.charCodeAt(53));
  const f1 = hexDigit(value.charCodeAt(54));
  if (traceBits === 0 || parentBits === 0 || f0 < 0 || f1 < 0) return undefined;
  return {
    traceId: value.slice(3, 35),
    parentId: value.slice(36, 52),
    flags: ((f0 << 4) | f1) & KNOWN_FLAGS,
  };
}

/** What the upstream receives: always version 00 (§3.2.4: a newer version is sent as 00). */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
}

/** The value of a lower-case hex digit (`0-9`, `a-f`), or -1. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** §3.3.1.1: a list of at most 32 members. */
const MAX_MEMBERS = 32;
const TAB = 0x09;
const SPACE = 0x20;
const COMMA = 0x2c;
const EQUALS = 0x3d;
const AT = 0x40;

/**
 * The `tracestate` to pass on, or undefined. Only read beside a valid traceparent (§3.3.1:
 * a participant that could not parse traceparent must not parse tracestate). A malformed one
 * is dropped as a whole rather than passed on (§3.3.1.1 lets a participant discard it): the
 * upstream then sees no vendor data rather than data the gateway could not vouch is a list.
 * Empty members (`a=1,,b=2`) are allowed by the grammar; repeated keys, more than 32
 * members, or any bad member drop it. Repeated headers reach here joined by `, `, which is
 * the one list the spec combines them into. One pass over the characters, no regex and no
 * split: it runs on every request that carries one.
 */
export function parseTracestate(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const keys: string[] = [];
  const end = value.length;
  let i = 0;
  while (i < end) {
    let c = value.charCodeAt(i);
    // Optional whitespace around members, and empty members.
    if (c === SPACE || c === TAB || c === COMMA) {
      i += 1;
      continue;
    }
    const keyStart = i;
    let at = -1;
    while (c !== EQUALS) {
      if (c === AT && at === -1) at = i;
      else if (!isKeyChar(c)) return undefined;
      i += 1;
      if (i === end) return undefined;
      c = value.charCodeAt(i);
    }
    if (!isKey(value, keyStart, at, i)) return undefined;
    const key = value.slice(keyStart, i);
    i += 1;
    const valueStart = i;
    let last = -1; // the last character that is not optional whitespace
    let tab = false;
    for (; i < end; i += 1) {
      c = value.charCodeAt(i);
      if (c === COMMA) break;
      // chr = %x20 / nblk-chr: printable ASCII but `,` and `=`; a tab only as trailing OWS.
      if (c === TAB) tab = true;
      else if (c < SPACE || c > 0x7e || c === EQUALS) return undefined;
      else if (c !== SPACE) {
        if (tab) return undefined;
        last = i;
      }
    }
    // §3.3.1.3.2: 1 to 256 characters, the last not a space.
    if (last === -1 || last - valueStart >= 256) return undefined;
    if (keys.includes(key) || keys.push(key) > MAX_MEMBERS) return undefined;
  }
  return keys.length === 0 ? undefined : value;
}

/** lcalpha / DIGIT / `_` `-` `*` `/` */
function isKeyChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x5f ||
    c === 0x2d ||
    c === 0x2a ||
    c === 0x2f
  );
}

/**
 * §3.3.1.3.1: a simple key (a letter first, at most 256), or tenant-id `@` system-id (the
 * tenant 1 to 241 characters, a letter or digit first; the system 1 to 14, a letter first).
 */
function isKey(text: string, start: number, at: number, end: number): boolean {
  const first = text.charCodeAt(start);
  if (at === -1) return isLetter(first) && end - start <= 256;
  return (
    at > start &&
    at - start <= 241 &&
    (isLetter(first) || (first >= 0x30 && first <= 0x39)) &&
    end - at - 1 >= 1 &&
    end - at - 1 <= 14 &&
    isLetter(text.charCodeAt(at + 1))
  );
}

function isLetter(c: number): boolean {
  return c >= 0x61 && c <= 0x7a;
}

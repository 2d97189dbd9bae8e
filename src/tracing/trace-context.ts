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
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/**
 * The `traceparent` value, or undefined when it does not count (then a new trace starts):
 * §3.2.2 (version 00 is exactly `00-<32 hex>-<16 hex>-<2 hex>`, lower case, neither id all
 * zeros) and §3.2.4 (a higher version is read by its first four fields: at least 55
 * characters, and after the flags either the end or `-`; version `ff` is invalid). Two
 * headers reach here joined by `, ` (Node's rule for repeated fields): never valid.
 */
export function parseTraceparent(value: string | undefined): TraceParent | undefined {
  if (value === undefined || value.length < HEADER_LENGTH) return undefined;
  const version = value.slice(0, 2);
  if (!isLowerHex(version) || version === 'ff') return undefined;
  if (
    version === '00'
      ? value.length !== HEADER_LENGTH
      : value.length > HEADER_LENGTH && value[HEADER_LENGTH] !== '-'
  )
    return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const traceId = value.slice(3, 35);
  const parentId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!isLowerHex(traceId) || traceId === ZERO_TRACE_ID) return undefined;
  if (!isLowerHex(parentId) || parentId === ZERO_SPAN_ID) return undefined;
  if (!isLowerHex(flags)) return undefined;
  return { traceId, parentId, flags: Number.parseInt(flags, 16) & KNOWN_FLAGS };
}

/** What the upstream receives: always version 00 (§3.2.4: a newer version is sent as 00). */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
}

function isLowerHex(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // 0-9, a-f
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/** §3.3.1.1: a list of at most 32 members. */
const MAX_MEMBERS = 32;
// §3.3.1.3.1 key: simple-key (a letter first), or tenant-id "@" system-id (a tenant id may
// begin with a digit).
const KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
// §3.3.1.3.2 value: 0*255(chr) nblk-chr; chr is 0x20-0x7E but for `,` and `=`; the last is not a space.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * The `tracestate` to pass on, or undefined. Only read beside a valid traceparent (§3.3.1:
 * "MUST NOT attempt to parse tracestate" otherwise). A malformed one is dropped as a whole
 * rather than passed on (§3.3.1.1 lets a participant discard it): the upstream then sees no
 * vendor data rather than data the gateway could not vouch is a list. Empty members (`a=1,,b=2`)
 * are allowed by the grammar; repeated keys, more than 32 members, or any bad member drop it.
 * Repeated headers reach here joined by `, `, which is the one list the spec combines them into.
 */
export function parseTracestate(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const members = value.split(',');
  const keys = new Set<string>();
  for (const raw of members) {
    const member = raw.trim();
    if (member === '') continue;
    const eq = member.indexOf('=');
    if (eq <= 0) return undefined;
    const key = member.slice(0, eq);
    if (!KEY.test(key) || !VALUE.test(member.slice(eq + 1)) || keys.has(key)) return undefined;
    keys.add(key);
  }
  if (keys.size === 0 || keys.size > MAX_MEMBERS) return undefined;
  return value;
}

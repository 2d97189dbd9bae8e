import { randomFillSync } from 'node:crypto';

/**
 * Random trace and span ids as lower-case hex, cut from one pooled hex string refilled from
 * the CSPRNG every 4 KiB: one `randomFillSync` and one hex conversion per 512 span ids, and a
 * string slice per id. W3C Trace Context level 2 §3.2.2.5.2 asks a participant that sets the
 * random flag for at least 7 random bytes in the trace id; these are all random.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let hex = '';
let offset = 0;

function randomHex(digits: number): string {
  if (offset + digits > hex.length) {
    hex = randomFillSync(pool).toString('hex');
    offset = 0;
  }
  const id = hex.slice(offset, offset + digits);
  offset += digits;
  return id;
}

const ZERO_SPAN_ID = '0'.repeat(16);
const ZERO_TRACE_ID = '0'.repeat(32);

/** 16 hex digits, never all zeros (an invalid id, §3.2.2.4). */
export function newSpanId(): string {
  const id = randomHex(16);
  return id === ZERO_SPAN_ID ? newSpanId() : id;
}

/** 32 hex digits, never all zeros (an invalid id, §3.2.2.3). */
export function newTraceId(): string {
  const id = randomHex(32);
  return id === ZERO_TRACE_ID ? newTraceId() : id;
}

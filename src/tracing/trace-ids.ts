import { randomFillSync } from 'node:crypto';

/**
 * Random trace and span ids as lower-case hex, cut from one pooled buffer refilled by the
 * CSPRNG every 512 span ids: one `randomFillSync` call per pool instead of one per id, and
 * no UUID formatting. W3C Trace Context level 2 §3.2.2.5.2 asks a participant that sets the
 * random flag for at least 7 random bytes in the trace id; these are all random.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

function randomHex(bytes: number): string {
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

const ZERO_SPAN_ID = '0000000000000000';

/** 16 hex digits, never all zeros (an invalid id, §3.2.2.4). */
export function newSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN_ID ? newSpanId() : id;
}

/** 32 hex digits, never all zeros (an invalid id, §3.2.2.3). */
export function newTraceId(): string {
  return randomHex(8) + newSpanId();
}

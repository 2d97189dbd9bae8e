/**
 * Cuts a byte stream into whole lines: `write` only ever receives complete lines (or, at the
 * end, what is left), so lines of several processes written by one writer never interleave.
 */
export function createLineRelay(write: (lines: Buffer) => void): {
  push(chunk: Buffer): void;
  end(): void;
} {
  let pending: Buffer[] = [];
  return {
    push(chunk) {
      const last = chunk.lastIndexOf(0x0a);
      if (last === -1) {
        pending.push(chunk);
        return;
      }
      const whole = chunk.subarray(0, last + 1);
      write(pending.length === 0 ? whole : Buffer.concat([...pending, whole]));
      pending = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : [];
    },
    end() {
      if (pending.length === 0) return;
      write(Buffer.concat([...pending, Buffer.from('\n')]));
      pending = [];
    },
  };
}

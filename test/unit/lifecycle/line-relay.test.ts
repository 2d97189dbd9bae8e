import { describe, expect, it } from 'vitest';
import { createLineRelay } from '../../../src/lifecycle/line-relay.js';

function relayed(chunks: string[]): string[] {
  const written: string[] = [];
  const relay = createLineRelay((lines) => written.push(lines.toString()));
  for (const chunk of chunks) relay.push(Buffer.from(chunk));
  relay.end();
  return written;
}

describe('the line relay of a worker output', () => {
  it('passes whole lines on as they come', () => {
    expect(relayed(['{"a":1}\n', '{"b":2}\n{"c":3}\n'])).toEqual([
      '{"a":1}\n',
      '{"b":2}\n{"c":3}\n',
    ]);
  });

  it('holds a line cut across chunks until its end arrives', () => {
    expect(relayed(['{"a":', '1}\n{"b"', ':2}', '\n'])).toEqual(['{"a":1}\n', '{"b":2}\n']);
  });

  it('writes only whole lines, so every write ends with a newline', () => {
    const written = relayed(['x\ny', 'y\nzz', 'z\n']);
    expect(written.every((lines) => lines.endsWith('\n'))).toBe(true);
    expect(written.join('')).toBe('x\nyy\nzzz\n');
  });

  it('ends an unfinished last line with a newline at the end of the stream', () => {
    expect(relayed(['done\npartial'])).toEqual(['done\n', 'partial\n']);
    expect(relayed([])).toEqual([]);
  });
});

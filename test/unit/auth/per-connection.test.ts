import { describe, expect, it } from 'vitest';
import { perConnection } from '../../../src/auth/per-connection.js';

/** A derivation that records each input it was asked for. */
function counting() {
  const asked: string[] = [];
  const derive = perConnection((input) => {
    asked.push(input);
    return `id:${input}`;
  });
  return { derive, asked };
}

describe('perConnection', () => {
  it('derives a connection’s repeated input once', () => {
    const { derive, asked } = counting();
    const connection = {};
    expect([derive('a', connection), derive('a', connection), derive('a', connection)]).toEqual([
      'id:a',
      'id:a',
      'id:a',
    ]);
    expect(asked).toEqual(['a']);
  });

  it('derives again when the input on a connection changes, and remembers the new one', () => {
    const { derive, asked } = counting();
    const connection = {};
    expect([derive('a', connection), derive('b', connection), derive('b', connection)]).toEqual([
      'id:a',
      'id:b',
      'id:b',
    ]);
    expect(derive('a', connection)).toBe('id:a');
    expect(asked).toEqual(['a', 'b', 'a']);
  });

  it('keeps connections apart', () => {
    const { derive, asked } = counting();
    const first = {};
    const second = {};
    expect([derive('a', first), derive('b', second), derive('a', first)]).toEqual([
      'id:a',
      'id:b',
      'id:a',
    ]);
    expect(asked).toEqual(['a', 'b']);
  });

  it('derives every time without a connection', () => {
    const { derive, asked } = counting();
    derive('a', undefined);
    derive('a', undefined);
    expect(asked).toEqual(['a', 'a']);
  });
});

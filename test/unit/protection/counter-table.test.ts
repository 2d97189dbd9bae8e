import { describe, expect, it } from 'vitest';
import { createCounterTable } from '../../../src/protection/counter-table.js';

const value = (n: number) => ({ n });

describe('createCounterTable', () => {
  it('makes room by dropping the least recently used ordinary entry, never a guarded one', () => {
    const table = createCounterTable<{ n: number }>(3);
    table.set('guarded', value(0), true);
    table.set('a', value(1), false);
    table.set('b', value(2), false);
    table.get('a');
    table.set('c', value(3), false);
    expect([table.get('guarded'), table.get('a'), table.get('b'), table.get('c')]).toEqual([
      value(0),
      value(1),
      undefined,
      value(3),
    ]);
  });

  it('drops the least recently used guarded entry once nothing ordinary is left, and holds the bound', () => {
    const table = createCounterTable<{ n: number }>(2);
    table.set('x', value(1), true);
    table.set('y', value(2), true);
    table.set('z', value(3), false);
    expect([table.get('x'), table.get('y'), table.get('z')]).toEqual([
      undefined,
      value(2),
      value(3),
    ]);
  });

  it('moves an entry between tiers without counting it twice', () => {
    const table = createCounterTable<{ n: number }>(2);
    table.set('a', value(1), false);
    table.set('a', value(2), true);
    table.set('b', value(3), false);
    table.set('a', value(4), false);
    expect([table.get('a'), table.get('b')]).toEqual([value(4), value(3)]);
    table.delete('a');
    expect(table.get('a')).toBeUndefined();
  });
});
